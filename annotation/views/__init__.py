"""Pages. Thin: check access with annotation.access, call a selector or a service, render.

htmx requests get the named partial of the same template; plain requests get the page, so
links and forms work with JavaScript off.
"""
