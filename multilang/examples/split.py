"""Split bolt: one tuple per whitespace-separated word of the input's first field."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import storm  # noqa: E402


class SplitBolt(storm.BasicBolt):
    def process(self, tup):
        for word in str(tup.values[0]).split():
            storm.emit([word])


if __name__ == "__main__":
    SplitBolt().run()
