from ctx_lsp.cli import main

if __name__ == "__main__":  # the indexing pool's worker processes import this module too
    raise SystemExit(main())
