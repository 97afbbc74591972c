"""`python -m labtui`: the console script's main; Ctrl-C while labtui's own modules load ends it with 130."""

try:
    from labtui.cli import main
except KeyboardInterrupt:
    raise SystemExit(130) from None

raise SystemExit(main())
