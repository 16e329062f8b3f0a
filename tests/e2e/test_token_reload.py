"""SIGHUP re-reads gantryd's token file without a restart: an added token is
valid, a removed one is refused with 401, and a file that does not parse
keeps the old set and logs why. A watch opened before the reload keeps
streaming (its user stays allocated)."""
import os
import signal

from gantry_e2e import API, GantrydTest, Watch, job, main, seed_tenancy, wait_for

A = API + "/projects/proj-a"


class TokenReload(GantrydTest):
    def rewrite(self, text):
        tmp = self.g.token_file + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.g.token_file)

    def hup_and_wait(self, log_line, nth):
        self.g.proc.send_signal(signal.SIGHUP)
        wait_for("%r logged %d times" % (log_line, nth),
                 lambda: self.g.logs().count(log_line) >= nth)

    def test_sighup_adds_removes_and_keeps_the_old_set_on_a_bad_file(self):
        seed_tenancy(self.g)
        with open(self.g.token_file) as f:
            original = f.read()
        self.assertEqual(self.g.request("GET", A + "/jobs", token="bob")[0], 200)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="fresh-token")[0], 401)
        w = Watch(self.g, A + "/jobs?resourceVersion=0", token="bob")
        self.addCleanup(w.close)

        # bob's line removed, a new token for him added
        kept = [l for l in original.splitlines() if not l.startswith("bob-token,")]
        self.rewrite("\n".join(kept + ['fresh-token,bob,1002,"ml"']) + "\n")
        self.hup_and_wait("token file reloaded", 1)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="bob")[0], 401)
        st, body = self.g.request("POST", A + "/jobs", job("after-hup", "proj-a"),
                                  token="fresh-token")
        self.assertEqual(st, 201, body)
        self.assertEqual(body["metadata"]["creator"], {"user": "bob", "uid": 1002})
        self.assertEqual(self.g.request("GET", A + "/jobs", token="admin")[0], 200)
        # the watch bob opened before the reload saw the new job
        wait_for("the old watch to stream the new job",
                 lambda: any(o["metadata"]["name"] == "after-hup" for _, _, o in w.events))

        # a malformed file: the last good set stays, and the log says why
        self.rewrite("fresh-token,bob\n")
        self.hup_and_wait("token file not reloaded", 1)
        self.assertIn("line 1: want token,user,uid", self.g.logs())
        self.assertEqual(self.g.request("GET", A + "/jobs", token="fresh-token")[0], 200)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="bob")[0], 401)
        # a missing file too
        os.unlink(self.g.token_file)
        self.hup_and_wait("token file not reloaded", 2)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="fresh-token")[0], 200)
        self.assertIsNone(self.g.proc.poll())

        # and back to the original set
        self.rewrite(original)
        self.hup_and_wait("token file reloaded", 2)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="bob")[0], 200)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="fresh-token")[0], 401)


if __name__ == "__main__":
    main()
