"""`episodic eval`: retrieval and the hook's view measured on a corpus, queries and negatives.

May import: anything (a face).
"""
