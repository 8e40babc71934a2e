"""Sentence spout: emits N sentences (first argument, default 10) as reliable tuples, replays
the ones that fail, and exits when all were acked, which ends the spout's input."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import storm  # noqa: E402

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class SentenceSpout(storm.Spout):
    def initialize(self, conf, context):
        self.total = int(sys.argv[1]) if len(sys.argv) > 1 else 10
        self.next_id = 0
        self.pending = {}
        self.replay = []

    def nextTuple(self):
        if self.replay:
            i = self.replay.pop()
        elif self.next_id < self.total:
            i = self.next_id
            self.next_id += 1
        else:
            if not self.pending:
                sys.exit(0)
            return
        self.pending[i] = SENTENCES[i % len(SENTENCES)]
        storm.emit([self.pending[i]], id=i)

    def ack(self, id):
        self.pending.pop(id, None)

    def fail(self, id):
        if id in self.pending:
            self.replay.append(id)


if __name__ == "__main__":
    SentenceSpout().run()
