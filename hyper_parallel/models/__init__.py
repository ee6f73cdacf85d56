"""Model zoo. Each sub-package registers its ``ModelSpec`` on import (see ``models.spec``)."""
