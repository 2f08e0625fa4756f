"""The memory console (issue 20): a few static pages (HTML, CSS and ES modules, no build
step) that a person opens in a browser to see, correct and forget memory. Every page calls
the public HTTP API with fetch() and the credential the person pasted; this package only
serves the files (`jnh serve` under /console/, and the `console` Cloud Function), so it
imports no services, adapters or composition root."""
