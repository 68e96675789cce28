import sys
from pathlib import Path

# The builders module is shared by test folders without being a package of the project.
sys.path.insert(0, str(Path(__file__).parent))
