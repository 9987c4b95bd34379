import unittest

import wordcount


class Smoke(unittest.TestCase):
    def test_package_imports(self):
        self.assertTrue(wordcount.__doc__)


if __name__ == "__main__":
    unittest.main()
