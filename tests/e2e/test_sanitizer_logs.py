"""A sanitizer report by any run of a daemon fails the test that ran it,
also when the test killed that run and started another (as the chaos tests
do): the harness's cleanup reads the daemon's whole log, which every start
appends to. The report is written into the log as a run that died of it
would have left it; the daemons around it are real."""
import signal
import unittest

from gantry_e2e import Gantlet, Gantryd, main, sanitizer_reports

# As AddressSanitizer and UndefinedBehaviorSanitizer print them.
ASAN = "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010\n"
UBSAN = "src/server/handlers.c:120:9: runtime error: signed integer overflow\n"


class SanitizerLogs(unittest.TestCase):
    def test_a_report_by_a_killed_run_fails_cleanup(self):
        g = Gantryd()
        try:
            g.start()
            g.kill(signal.SIGKILL)
            with open(g.log_path, "a") as f:
                f.write(ASAN)
            g.start()  # the restarted run is clean
            self.assertEqual(g.request("GET", "/healthz", token=None, raw=True)[0], 200)
        except BaseException:
            g.cleanup()
            raise
        with self.assertRaises(AssertionError) as cm:
            g.cleanup()
        self.assertIn("heap-use-after-free", str(cm.exception))

    def test_a_gantlet_report_fails_cleanup_and_clean_runs_pass(self):
        g = Gantryd().start()
        self.addCleanup(g.cleanup)  # its own runs were clean: raises nothing
        a = Gantlet(g)
        try:
            a.start()
            a.kill()
            with open(a.log_path, "a") as f:
                f.write(UBSAN)
            a.start()
            self.assertEqual(len(sanitizer_reports([a.log_path])), 1)
        except BaseException:
            a.cleanup()
            raise
        with self.assertRaises(AssertionError) as cm:
            a.cleanup()
        self.assertIn("runtime error: signed integer overflow", str(cm.exception))


if __name__ == "__main__":
    main()
