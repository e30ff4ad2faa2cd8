"""The file system rules every stage shares (docs/security.md, docs/reliability.md): a path made
from text stays inside its root (`fs.paths`), writes never follow a link and replace files whole
(`fs.writes`), and an OSError reaches the user naming its path and its real cause
(`fs.oserrors`)."""
