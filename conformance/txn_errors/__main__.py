"""``python -m conformance.txn_errors [--client X] [--case C] [--broker kafka] [--write docs/transactions.md]``."""

import sys

from conformance.txn_errors.table import main

sys.exit(main())
