from nupp.runtime.cli import main

raise SystemExit(main())
