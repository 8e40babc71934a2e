"""Pass-through bolt: emits each input unchanged (anchored and acked by BasicBolt). Used by
scripts/bench_multilang.sh to measure what the protocol costs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import storm  # noqa: E402


class PassThrough(storm.BasicBolt):
    def process(self, tup):
        storm.emit(tup.values, need_task_ids=os.environ.get("NEED_TASK_IDS", "1") != "0")


if __name__ == "__main__":
    PassThrough().run()
