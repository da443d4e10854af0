from episodic.cli import main

main()
