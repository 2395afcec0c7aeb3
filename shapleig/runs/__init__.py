"""Running a game: the budget-charging ``BudgetedGame``, evaluators (in process, executors) and the evaluation store."""
