"""Example agents and tasks for groundeval users (a package, so that a site-packages ``examples`` never shadows it)."""
