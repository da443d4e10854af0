"""Distillers turn a trajectory into a card; `checks` holds the card rules every distiller obeys."""

from episodic.distill.checks import card_violations, enforce_card, judge_outcome, parse_card_payload
from episodic.distill.heuristic import HeuristicDistiller

__all__ = ["HeuristicDistiller", "card_violations", "enforce_card", "judge_outcome", "parse_card_payload"]
