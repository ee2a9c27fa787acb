from dsh_tui.cli import main

raise SystemExit(main())
