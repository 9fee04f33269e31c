from ctx_lsp.cli import main

raise SystemExit(main())
