import sys
from pathlib import Path

# clikit (running the command, realistic models) lives in tests/cli and is shared by these folders.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
