"""python3 -m mblast_bundle PROBLEM.py OUT_DIR [...]      tensor bundles (bundles.py)
python3 -m mblast_bundle shrink PROBLEM.py --elements N   the problem at reduced sizes (shrink.py)"""

import sys

from . import bundles, shrink

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(shrink.main(args[1:]) if args[:1] == ["shrink"] else bundles.main(args))
