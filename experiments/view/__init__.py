"""``warpgym view``: a run as a local web page, refreshed while the run goes on.

The page (``page.html``, ``view.js``, ``view.css``) is static; it reads JSON documents built from the
run's store: one index (the run, its summary, every episode's outcome) and one per episode (every
turn). ``site`` writes them next to the run as ``view/`` for a browser to open from disk;
``server`` serves the same documents on 127.0.0.1, rebuilt when the store changes.

Everything from the run (model answers above all) is untrusted text: the page builds its DOM with
``textContent`` only and forbids inline script through its content-security policy.
"""
