"""The authorisation matrix: every role x verb x kind or subresource x own or
other project against one real gantryd, each answer checked against a table
derived from docs/api.md "Authentication and access" (expected(), below).
Lists and watches (within a project and across projects) must show exactly
the objects of the projects the caller may read; Events and logs of other
projects are not readable. On failure the test prints the matrix's size and
every mismatching cell."""
import http.client
import json
import os
import shutil
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from gantry_e2e import API, TOKENS, GantrydTest, job, main, obj, seed_tenancy, wait_for

# role -> (token name in TOKENS or a raw token, the project it belongs to)
ROLES = {
    "admin": ("admin", None),
    "node": ("node", None),               # a shared agent credential: bound to no node
    "node-n1": ("node-n1", None),         # system:node:n1 (NodeRestriction)
    "node-n2": ("node-n2", None),         # system:node:n2 (NodeRestriction)
    "dept-admin": ("erin", "proj-b"),     # admin of dept-b, which holds proj-b
    "project-admin": ("alice", "proj-a"),
    "member": ("bob", "proj-a"),
    "viewer": ("carol", "proj-a"),
    "other-user": ("nobody", None),       # member of nothing
    "no-token": (None, None),
    "bad-token": ("not-a-token", None),
}
DEPT = {"proj-a": "dept-a", "proj-b": "dept-b"}
PROJECT_KINDS = ("jobs", "tasks", "notebooks", "volumes", "imagebuilds", "models",
                 "modelversions")
CLUSTER_KINDS = ("projects", "departments", "nodes", "priorityclasses", "events")
KIND_OF = {"jobs": "Job", "tasks": "Task", "notebooks": "Notebook", "volumes": "Volume",
           "imagebuilds": "ImageBuild", "models": "Model", "modelversions": "ModelVersion",
           "projects": "Project", "departments": "Department",
           "nodes": "Node", "priorityclasses": "PriorityClass", "events": "Event"}
# the object every read, update and subresource cell names, in each project
# (a ModelVersion's name is the server's: MODEL-vN, looked up in self.names)
TARGET = {"jobs": "train", "tasks": "train-worker-0", "notebooks": "nb", "volumes": "vol",
          "imagebuilds": "ib", "models": "m", "modelversions": "mv"}
BOUND_TASK = "bound-worker-0"  # bound to node n1 at set-up: its secrets can be made
# the node roles, and the node each is bound to (NodeRestriction; None: none)
NODE_OF = {"node": None, "node-n1": "n1", "node-n2": "n2"}


def sides(role):
    """(own, other) project of a role; users of no project take proj-a as own."""
    own = ROLES[role][1] or "proj-a"
    return {"own": own, "other": "proj-b" if own == "proj-a" else "proj-a"}


def project_role(role, project):
    """The role's standing in a project (admin, member, viewer, dept-admin)
    or None."""
    if role == "dept-admin":
        return "dept-admin" if project == "proj-b" else None
    standing = {"project-admin": "admin", "member": "member", "viewer": "viewer"}
    return standing.get(role) if ROLES[role][1] == project else None


def readable(role):
    """The projects whose objects the role may read."""
    if role == "admin" or role in NODE_OF:
        return {"proj-a", "proj-b"}
    return {p for p in ("proj-a", "proj-b") if project_role(role, p)}


# The answer of an allowed request that no node can serve: the task has no
# node yet (log, exec) or the notebook is not running (its proxy).
NO_AGENT = {"log": 409, "exec": 409, "proxy": 503}
OK = {"get": 200, "list": 200, "watch": 200, "create": 201, "update": 200, "delete": 200,
      "status": 200, "binding": 201, "secrets": 200, "scalars": 200, "history": 200,
      "missing": 404, "usage": 200}


def allowed(role, verb, kind, project):
    """docs/api.md "Authentication and access" as a function. verb: get, list,
    watch, create, update, delete, or a subresource's name; kind: a plural;
    project: the project the object is in (for Projects: itself; Events: the
    involved object's; departments: the project whose department it is)."""
    if verb == "usage":
        return True  # any authenticated user; the answer holds what it may read
    if role == "admin":
        # a task's status and secrets are its agent's alone: "no one else may"
        return not (kind == "tasks" and verb in ("status", "secrets"))
    read = verb in ("get", "list", "watch", "missing", "log", "scalars", "history")
    if role in NODE_OF:
        if read or (kind, verb) == ("events", "create"):
            return True
        bound = NODE_OF[role]
        if kind == "nodes":
            # the cells write Node n1 (update, status) and nodes of other
            # names (create, delete): a bound node only its own
            return bound is None or (bound == "n1" and verb in ("update", "status"))
        # the status and secrets cells name the task bound to n1
        return (kind, verb) in (("tasks", "status"), ("tasks", "secrets")) and bound in (None, "n1")
    pr = project_role(role, project) if project else None
    if kind in ("nodes", "priorityclasses"):
        return read
    if verb in ("status", "binding", "secrets"):
        return False  # controllers, the scheduler and agents
    if kind == "departments":
        return read and pr is not None  # a dept admin, or a member of one of its projects
    if kind == "projects":
        if read:
            return pr is not None
        if verb == "create":
            return pr == "dept-admin"  # of the new project's department
        if verb == "update":
            return pr in ("admin", "dept-admin")
        return verb == "delete" and pr == "dept-admin"
    if kind == "events":
        # an Event's project is in the object: a name that does not exist
        # is 404 to anyone, one that does is read by its project's readers
        return verb == "missing" or (read and pr is not None)
    # jobs, tasks, notebooks, volumes, imagebuilds and their log/exec/proxy
    if read:
        return pr is not None
    return pr in ("member", "admin", "dept-admin")


def expected(role, verb, kind, project):
    if role in ("no-token", "bad-token"):
        return 401
    if not allowed(role, verb, kind, project):
        return 403
    return NO_AGENT.get(verb, OK.get(verb))


def new_object(kind, name, project, artifact=None):
    """A valid object of kind for a create cell (a ModelVersion registers
    the file artifact)."""
    if kind == "models":
        return obj("Model", name, project, spec={"framework": "pytorch"})
    if kind == "modelversions":
        return obj("ModelVersion", name, project,
                   spec={"model": "m", "source": {"hostPath": artifact}})
    if kind == "jobs":
        return job(name, project)
    if kind == "tasks":
        return obj("Task", name, project, spec={
            "job": "train", "replicaType": "Worker", "replicaIndex": 0, "template": {
                "command": ["/bin/true"], "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}})
    if kind == "notebooks":
        return obj("Notebook", name, project, spec={})
    if kind == "volumes":
        return obj("Volume", name, project, spec={"capacity": {"storage": "1Mi"}})
    if kind == "imagebuilds":
        return obj("ImageBuild", name, project, spec={"dockerfile": "FROM scratch\n",
                                                       "image": "authz/" + name + ":1"})
    if kind == "projects":
        return obj("Project", name, spec={"department": DEPT[project], "members": []})
    if kind == "departments":
        return obj("Department", name, spec={"admins": []})
    if kind == "nodes":
        return obj("Node", name, spec={})
    if kind == "priorityclasses":
        return obj("PriorityClass", name, value=5)
    if kind == "events":
        return obj("Event", name + ".0123456789abcdef", reason="Probe", message="m",
                   involvedObject={"kind": "Job", "name": "train", "project": project})
    raise ValueError(kind)


class AuthzMatrix(GantrydTest):
    def setUp(self):
        root = tempfile.mkdtemp(prefix="gantry-authz-")
        self.addCleanup(shutil.rmtree, root, True)
        self.artifact = os.path.join(root, "model.pt")
        with open(self.artifact, "wb") as f:
            f.write(b"weights")
        os.chmod(root, 0o755)  # users register it as themselves
        os.chmod(self.artifact, 0o644)
        os.makedirs(os.path.join(root, "volumes"))
        self.gantryd_args = ("--storage-class", "std=" + os.path.join(root, "volumes"),
                             "--storage-root", root,
                             "--model-store", os.path.join(root, "models"))
        self.names = {}  # (project, requested ModelVersion name) -> the server's
        super().setUp()
        g = self.g
        quota = ({"nvidia.com/gpu": 64, "storage": "1Gi"}, {"nvidia.com/gpu": 64, "storage": "1Gi"})
        seed_tenancy(g, quotas={"dept-a": quota, "dept-b": quota})
        self.ok(g.request("POST", API + "/nodes", obj("Node", "n1", spec={}), token="node"))
        self.ok(g.request("POST", API + "/priorityclasses", obj("PriorityClass", "pc", value=1)))
        for p in ("proj-a", "proj-b"):
            for kind in PROJECT_KINDS:
                if kind != "tasks":
                    self.create(kind, p, TARGET[kind])
            self.ok(g.request("POST", self.coll("jobs", p), job("bound", p)))
            self.ok(g.request("POST", API + "/events", new_object("events", "seen-" + p, p),
                              token="node"))
        for p in ("proj-a", "proj-b"):
            for t in (TARGET["tasks"], BOUND_TASK):
                wait_for("task %s/%s" % (p, t),
                         lambda: g.request("GET", self.coll("tasks", p) + "/" + t)[0] == 200)
            self.ok(g.request("POST", self.coll("tasks", p) + "/%s/binding" % BOUND_TASK,
                              {"nodeName": "n1", "gpus": [], "ports": []}))
        # one object per role, side and kind for the delete cells
        for role in ROLES:
            for side, p in sides(role).items():
                for kind in PROJECT_KINDS + ("events", "projects"):
                    if kind != "tasks":
                        self.create(kind, p, self.del_name(role, side),
                                    token="node" if kind == "events" else "admin")
                    else:
                        self.ok(g.request("POST", self.coll(kind, p), new_object(
                            kind, self.del_name(role, side), p)))
            for kind in ("departments", "nodes", "priorityclasses"):
                self.ok(g.request("POST", self.coll(kind, None),
                                  new_object(kind, self.del_name(role, "own"), None)))

    def create(self, kind, project, name, token="admin"):
        """Create an object for the cells as token; remember a ModelVersion's
        name."""
        made = self.ok(self.g.request("POST", self.coll(kind, project), self.body(
            kind, name, project), token=token))
        if kind == "modelversions":
            self.names[(project, name)] = made["metadata"]["name"]

    def body(self, kind, name, project):
        return new_object(kind, name, project, self.artifact)

    def ok(self, answer):
        self.assertIn(answer[0], (200, 201), answer)
        return answer[1]

    @staticmethod
    def coll(kind, project):
        """A collection's path; a project kind's across projects without project."""
        if kind in PROJECT_KINDS and project:
            return API + "/projects/%s/%s" % (project, kind)
        return API + "/" + kind

    @staticmethod
    def del_name(role, side):
        return "del-%s-%s" % (role, side)

    def path(self, kind, project, name):
        if kind == "modelversions":
            name = self.names.get((project, name), name)
        if kind == "events" and not name.count("."):
            name += ".0123456789abcdef"
        return self.coll(kind, project) + "/" + name

    def send(self, role, method, path, body=None, raw=False):
        return self.g.request(method, path, body, token=ROLES[role][0], raw=raw)

    def put_back(self, role, path, sub=""):
        """GET as admin, PUT the same object back as role (to path + sub);
        again on 409 (controllers write the object meanwhile)."""
        for _ in range(10):
            cur = self.ok(self.g.request("GET", path))
            st, body = self.send(role, "PUT", path + sub, cur)
            if st != 409:
                return st, body
            time.sleep(0.05)
        return st, body

    def watch(self, role, path):
        """Open a watch from revision 0; (status, projects of the objects sent
        within 0.4 s of quiet)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.g.port, timeout=10)
        tok = ROLES[role][0]
        hdrs = {"Authorization": "Bearer " + TOKENS.get(tok, (tok,))[0]} if tok else {}
        sep = "&" if "?" in path else "?"
        conn.request("GET", path + sep + "watch=true&resourceVersion=0", headers=hdrs)
        resp = conn.getresponse()
        seen = set()
        try:
            if resp.status == 200:
                conn.sock.settimeout(0.4)
                while True:
                    line = resp.readline()
                    if not line:
                        break
                    if line.strip():
                        seen.add(project_of(json.loads(line)["object"]))
            else:
                resp.read()
        except (socket.timeout, TimeoutError):
            pass
        finally:
            conn.close()
        return resp.status, seen

    # ---- the cells ----

    def cells(self):
        """Every cell: (role, verb, kind, side, project, fn) where fn() sends
        the request and returns (status, projects seen or None)."""
        out = []

        def add(role, verb, kind, side, project, fn):
            out.append((role, verb, kind, side, project, fn))

        def answer(role, method, path, body=None, raw=False):
            return lambda: (self.send(role, method, path, body, raw)[0], None)

        for role in ROLES:
            for side, p in sides(role).items():
                for kind in PROJECT_KINDS:
                    obj_path = self.path(kind, p, TARGET[kind])
                    add(role, "get", kind, side, p, answer(role, "GET", obj_path))
                    add(role, "missing", kind, side, p,
                        answer(role, "GET", self.path(kind, p, "no-such")))
                    add(role, "list", kind, side, p, self.lister(role, self.coll(kind, p)))
                    add(role, "watch", kind, side, p,
                        lambda r=role, k=kind, q=p: self.watch(r, self.coll(k, q)))
                    add(role, "create", kind, side, p, answer(
                        role, "POST", self.coll(kind, p), self.body(kind, "c-" + role, p)))
                    add(role, "update", kind, side, p,
                        lambda r=role, q=obj_path: (self.put_back(r, q)[0], None))
                    add(role, "delete", kind, side, p, answer(
                        role, "DELETE", self.path(kind, p, self.del_name(role, side))))
                task = self.path("tasks", p, TARGET["tasks"])
                bound = self.path("tasks", p, BOUND_TASK)
                jobp = self.path("jobs", p, "train")
                add(role, "status", "tasks", side, p,
                    lambda r=role, q=bound: (self.put_back(r, q, "/status")[0], None))
                add(role, "status", "jobs", side, p, answer(role, "PUT", jobp + "/status",
                                                            {"conditions": []}))
                add(role, "binding", "tasks", side, p, answer(
                    role, "POST", task + "/binding", {"nodeName": "n1", "gpus": [], "ports": []}))
                add(role, "secrets", "tasks", side, p, answer(role, "GET", bound + "/secrets"))
                add(role, "log", "tasks", side, p, answer(role, "GET", task + "/log"))
                add(role, "exec", "tasks", side, p, answer(role, "POST", task + "/exec",
                                                           {"command": ["/bin/true"]}))
                add(role, "scalars", "jobs", side, p, answer(role, "GET", jobp + "/scalars"))
                add(role, "history", "jobs", side, p, answer(role, "GET", jobp + "/history"))
                add(role, "proxy", "notebooks", side, p, answer(
                    role, "GET", "/projects/%s/notebooks/nb/" % p, raw=True))
                # cluster-scoped objects that belong to a project
                add(role, "get", "projects", side, p, answer(role, "GET", self.path(
                    "projects", None, p)))
                add(role, "update", "projects", side, p,
                    lambda r=role, q=self.path("projects", None, p): (self.put_back(r, q)[0],
                                                                      None))
                add(role, "create", "projects", side, p, answer(
                    role, "POST", self.coll("projects", None),
                    new_object("projects", "c-%s-%s" % (role, side), p)))
                add(role, "delete", "projects", side, p, answer(role, "DELETE", self.path(
                    "projects", None, self.del_name(role, side))))
                add(role, "get", "departments", side, p, answer(
                    role, "GET", self.path("departments", None, DEPT[p])))
                add(role, "get", "events", side, p, answer(
                    role, "GET", self.path("events", None, "seen-" + p)))
                add(role, "missing", "events", side, p, answer(
                    role, "GET", self.path("events", None, "gone-" + p)))
                add(role, "create", "events", side, p, answer(
                    role, "POST", self.coll("events", None),
                    new_object("events", "c-%s-%s" % (role, side), p)))
                add(role, "update", "events", side, p,
                    lambda r=role, q=self.path("events", None, "seen-" + p): (
                        self.put_back(r, q)[0], None))
                add(role, "delete", "events", side, p, answer(
                    role, "DELETE", self.path("events", None, self.del_name(role, side))))
            # lists and watches across projects, and the cluster's own kinds
            for kind in PROJECT_KINDS + CLUSTER_KINDS:
                add(role, "list", kind, "all", None, self.lister(role, self.coll(kind, None)))
                add(role, "watch", kind, "all", None,
                    lambda r=role, k=kind: self.watch(r, self.coll(k, None)))
            for kind in ("nodes", "priorityclasses"):
                name = {"nodes": "n1", "priorityclasses": "pc"}[kind]
                add(role, "get", kind, "cluster", None,
                    answer(role, "GET", self.path(kind, None, name)))
                add(role, "create", kind, "cluster", None, answer(
                    role, "POST", self.coll(kind, None), new_object(kind, "c-" + role, None)))
                add(role, "update", kind, "cluster", None,
                    lambda r=role, q=self.path(kind, None, name): (self.put_back(r, q)[0], None))
                add(role, "delete", kind, "cluster", None, answer(
                    role, "DELETE", self.path(kind, None, self.del_name(role, "own"))))
            add(role, "status", "nodes", "cluster", None,
                lambda r=role: (self.put_back(r, self.path("nodes", None, "n1"), "/status")[0],
                                None))
            add(role, "create", "departments", "cluster", None, answer(
                role, "POST", self.coll("departments", None),
                new_object("departments", "c-" + role, None)))
            add(role, "update", "departments", "cluster", None,
                lambda r=role: (self.put_back(r, self.path("departments", None, "dept-a"))[0],
                                None))
            add(role, "delete", "departments", "cluster", None, answer(
                role, "DELETE", self.path("departments", None, self.del_name(role, "own"))))
            for sub in ("usage", "usagerecords", "jobstats", "nodestats", "whoami",
                        "clusterinfo"):
                add(role, "usage", sub, "cluster", None, answer(role, "GET", API + "/" + sub))
            add(role, "usage", "version", "cluster", None, answer(role, "GET", "/version",
                                                                  raw=True))
            for plain in ("/metrics", "/healthz", "/readyz"):
                add(role, "plain", plain, "cluster", None, answer(role, "GET", plain, raw=True))
        return out

    def lister(self, role, path):
        def fn():
            st, body = self.send(role, "GET", path)
            items = body.get("items", []) if st == 200 and isinstance(body, dict) else []
            return st, {project_of(o) for o in items} if st == 200 else None
        return fn

    def expect_cell(self, role, verb, kind, side, project):
        """(status, the projects a list or watch must show, or None)."""
        if verb == "plain":
            return 200, None
        if side == "all":  # across projects: always 200 to a user, filtered
            if role in ("no-token", "bad-token"):
                return 401, None
            return 200, self.visible(role, kind)
        st = expected(role, verb, kind, project)
        if verb in ("list", "watch") and st == 200:
            return st, {project}
        return st, None

    @staticmethod
    def visible(role, kind):
        """What an across-projects list of kind shows the role, as
        project_of() names the objects."""
        if kind in ("nodes", "priorityclasses"):
            return {None}
        projects = readable(role)
        if kind == "departments":
            return {"dept:" + DEPT[p] for p in projects}
        return projects

    def test_matrix(self):
        cells = self.cells()
        # reads and watches first (they change nothing), then the writes
        # (binding last: it binds the task the log and exec cells name)
        order = ("get", "missing", "list", "watch", "log", "scalars", "history", "proxy",
                 "secrets", "usage", "plain", "update", "status", "create", "exec", "delete",
                 "binding")
        cells.sort(key=lambda c: order.index(c[1]))
        watches = [i for i, c in enumerate(cells) if c[1] == "watch"]
        with ThreadPoolExecutor(8) as pool:
            watched = dict(zip(watches, pool.map(lambda i: cells[i][5](), watches)))
        bad = []
        for i, (role, verb, kind, side, project, fn) in enumerate(cells):
            got = watched[i] if i in watched else fn()
            want = self.expect_cell(role, verb, kind, side, project)
            if not matches(role, got, want):
                bad.append("%-13s %-8s %-15s %-7s %-6s want %s got %s" % (
                    role, verb, kind, side, project or "-", want, got))
        roles = len(ROLES)
        print("authz matrix: %d cells (%d roles x %d verb/kind/side cells each), %d mismatches"
              % (len(cells), roles, len(cells) // roles, len(bad)))
        if bad:
            self.fail("%d of %d cells differ from the rules:\n%s" % (len(bad), len(cells),
                                                                     "\n".join(bad)))
        # what was refused did not happen
        for p in ("proj-a", "proj-b"):
            st, lst = self.g.request("GET", self.coll("jobs", p))
            made = {o["metadata"]["name"] for o in lst["items"]}
            for role in ROLES:
                self.assertEqual("c-" + role in made, allowed(role, "create", "jobs", p),
                                 (role, p, sorted(made)))


# the objects lists are compared on: the two projects' and departments'
# (and cluster objects, None); set-up's and the cells' own projects and
# departments are left out
COMPARED = {"proj-a", "proj-b", "dept:dept-a", "dept:dept-b", None}


def matches(role, got, want):
    """Does an answer (status, projects seen) match the expected one? An
    admin's or node's list must hold at least what is expected (they read
    everything); anyone else's exactly that: nothing of another project."""
    if got[0] != want[0] or want[1] is None:
        return got[0] == want[0]
    seen = got[1] & COMPARED
    return seen >= want[1] if role == "admin" or role in NODE_OF else seen == want[1]


def project_of(o):
    """What an object is compared as: its project; a Project itself; an
    Event its involved object's project; a Department "dept:NAME"."""
    if o.get("kind") == "Project":
        return o["metadata"]["name"]
    if o.get("kind") == "Department":
        return "dept:" + o["metadata"]["name"]
    if o.get("kind") == "Event":
        return (o.get("involvedObject") or {}).get("project")
    return o["metadata"].get("project")


if __name__ == "__main__":
    main()
