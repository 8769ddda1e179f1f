"""The web listener of ``replica-assignor watch``: configuration (:mod:`.config`), who asks
(:mod:`.auth`), the HTTP server and its lifecycle (:mod:`.server`), the endpoints (:mod:`.api`),
what an operator may ask (:mod:`.operations`) and the page (``static/``)."""
