from labtui.cli import main

raise SystemExit(main())
