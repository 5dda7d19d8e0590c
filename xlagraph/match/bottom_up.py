"""`users_of` under its former module name, for the diagnosis modules that still import it from
here (the bottom-up matching phase itself runs in the core: rust/src/matcher.rs)."""

from xlagraph.match.users import users_of

__all__ = ["users_of"]
