"""Language-model adapters for formation (the `jennah.ports.model.LanguageModel` port).

`rules` (deterministic, offline: the embedded default), `scripted` (answers set by
a test or a benchmark) and `vertex` (Gemini on Vertex AI through google-genai).
"""
