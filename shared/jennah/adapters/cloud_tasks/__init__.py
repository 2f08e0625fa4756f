"""Cloud Tasks adapter: the task queue of the production deployment."""
