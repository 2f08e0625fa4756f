"""Firestore adapters: the control documents of the production deployment."""
