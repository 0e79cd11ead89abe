from gbdesk.cli import main

raise SystemExit(main())
