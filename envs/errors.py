"""One error type for bad network descriptions, so users see the field and the fix."""


class SpecError(ValueError):
    """A network description is invalid. The message names the field, the problem and the fix."""

    def __init__(self, field: str, problem: str, fix: str):
        self.field = field
        self.problem = problem
        self.fix = fix
        super().__init__(f"{field}: {problem}. Fix: {fix}.")
