"""A Sphinx extension for netlab's site: one fix to what the pages load.

sphinx-thebe adds its configuration as an inline script (``const THEBE_JS_URL = ...``) through
``app.add_js_file(None, body=...)`` after the builder exists; Sphinx 7.4 then lists it twice (from the
registry, with filename None, and from the builder, with filename ""), and the second ``const`` is a
SyntaxError in every page's console.
Sphinx removes duplicate script files by name but not inline scripts, so this removes them by body.
"""
from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        key = (getattr(js, "filename", js) or None, tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept


def setup(app):
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
