"""The book's own Sphinx extensions, named ``_ext.<module>`` in ``_config.yml``'s
``extra_extensions`` (the build runs from the repository's root, which is on the path)."""
