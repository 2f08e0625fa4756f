"""`python -m jennah.cli` is `jnh`."""

from jennah.cli.main import main

main()
