"""A real Kubernetes control plane on loopback for the tests (controller-runtime's envtest
convention): etcd and kube-apiserver, and where asked kube-scheduler and
kube-controller-manager, from the binaries in `$KUBEBUILDER_ASSETS`.

    plane = ControlPlane(tmp_dir, controllers=True).start()
    api = plane.client()                       # the admin (system:masters)
    api = plane.client(as_user="system:serviceaccount:ns:sa")   # RBAC applies
    plane.stop()                               # every process it started, by PID

Everything it writes (certificates, etcd's data, one log per component) is under its folder.
The API server runs with RBAC and the Node authorizer (`--authorization-mode=Node,RBAC`), as
GKE and EKS run theirs; a pod's log is read through the API (`pods/log`), which the API server
fetches from the node's kubelet endpoint (`tests.controlplane._kubelet` serves it).

Where to get the binaries: controller-runtime's `setup-envtest use -p path` prints a folder of
them; `KUBEBUILDER_ASSETS` names it. Without it, the tests marked `controlplane` are skipped.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
HOW_TO_GET = ("set KUBEBUILDER_ASSETS to a folder holding etcd, kube-apiserver, kube-scheduler "
              "and kube-controller-manager (controller-runtime's `setup-envtest use -p path` "
              "prints one; .ci/run uses ../shared/envtest/bin where it exists)")


def assets() -> Path | None:
    """The KUBEBUILDER_ASSETS folder when it holds every binary, else None."""
    value = os.environ.get("KUBEBUILDER_ASSETS", "")
    if not value:
        return None
    folder = Path(value)
    if all(os.access(folder / b, os.X_OK) for b in BINARIES):
        return folder
    return None


def missing_reason() -> str:
    value = os.environ.get("KUBEBUILDER_ASSETS", "")
    if not value:
        return f"no real control plane: KUBEBUILDER_ASSETS is not set; {HOW_TO_GET}"
    lacking = [b for b in BINARIES if not os.access(Path(value) / b, os.X_OK)]
    return (f"no real control plane: KUBEBUILDER_ASSETS={value} lacks {', '.join(lacking)}; "
            f"{HOW_TO_GET}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(argv: list[str], cwd: Path) -> None:
    done = subprocess.run(["openssl", *argv], cwd=cwd, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(argv)} failed: {done.stderr.strip()}")


def _key(name: str, cwd: Path) -> None:
    """An EC P-256 key in PKCS#8 (quick to make; every component takes it)."""
    _openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-out", f"{name}.key"], cwd)


def make_pki(folder: Path) -> None:
    """A CA; the API server's serving certificate; client certificates for the admin
    (system:masters), the scheduler, the controller-manager and the API server's own client to
    kubelets; a service-account signing key; and a serving certificate for the kubelets."""
    folder.mkdir(parents=True, exist_ok=True)
    _key("ca", folder)
    _openssl(["req", "-x509", "-new", "-key", "ca.key", "-days", "3650", "-subj",
              "/CN=accelfleet-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
              "-out", "ca.crt"], folder)
    server_ext = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                  "keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,"
                  "IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                  "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n")
    client_ext = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                  "keyEncipherment\nextendedKeyUsage=clientAuth\n")
    certs = {"apiserver": ("/CN=kube-apiserver", server_ext),
             "kubelet": ("/CN=kubelet", server_ext),
             "admin": ("/O=system:masters/CN=accelfleet-test-admin", client_ext),
             "scheduler": ("/CN=system:kube-scheduler", client_ext),
             "controller-manager": ("/CN=system:kube-controller-manager", client_ext),
             "apiserver-kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client",
                                          client_ext)}
    for name, (subject, ext) in certs.items():
        _key(name, folder)
        (folder / f"{name}.ext").write_text(ext, encoding="utf-8")
        _openssl(["req", "-new", "-key", f"{name}.key", "-subj", subject,
                  "-out", f"{name}.csr"], folder)
        _openssl(["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                  "-CAcreateserial", "-days", "3650", "-extfile", f"{name}.ext",
                  "-out", f"{name}.crt"], folder)
    _key("sa", folder)
    _openssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], folder)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, pki: Path, user: str, *,
                     context: str = "envtest") -> Path:
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: {server}
    certificate-authority-data: {_b64(pki / 'ca.crt')}
users:
- name: {user}
  user:
    client-certificate-data: {_b64(pki / f'{user}.crt')}
    client-key-data: {_b64(pki / f'{user}.key')}
contexts:
- name: {context}
  context:
    cluster: envtest
    user: {user}
current-context: {context}
""", encoding="utf-8")
    path.chmod(0o600)
    return path


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ kube-scheduler + kube-controller-manager when `controllers`)
    under `root`. `apiserver_args`: more kube-apiserver flags (`--etcd-compaction-interval=2s`)."""

    root: Path
    controllers: bool = True
    apiserver_args: list[str] = field(default_factory=list)
    timeout_s: float = 120.0
    bin: Path | None = None
    server: str = ""
    started_s: float = 0.0
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        assert self.bin is not None
        self.logs.mkdir(parents=True, exist_ok=True)
        with (self.logs / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen([str(self.bin / name), *argv], cwd=self.root,
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def _wait(self, name: str, url: str, ctx: ssl.SSLContext | None, deadline: float,
              ok: bytes) -> None:
        last = ""
        while time.monotonic() < deadline:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: "
                                   f"{self.log_tail(name)}")
            try:
                with urllib.request.urlopen(url, context=ctx, timeout=2) as answer:
                    body = answer.read()
                    if answer.status == 200 and ok in body.replace(b" ", b""):
                        return
                    last = body[:200].decode(errors="replace")
            except Exception as exc:  # not up yet
                last = str(exc)
            time.sleep(0.05)
        raise RuntimeError(f"{name} not ready at {url} after {self.timeout_s} s: {last}; "
                           f"{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 20) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> ControlPlane:
        self.bin = self.bin or assets()
        if self.bin is None:
            raise RuntimeError(missing_reason())
        t0 = time.monotonic()
        deadline = t0 + self.timeout_s
        self.root.mkdir(parents=True, exist_ok=True)
        make_pki(self.pki)
        client_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd = f"http://127.0.0.1:{client_port}"
        try:
            self._spawn("etcd", ["--name=accelfleet-test", f"--data-dir={self.root / 'etcd'}",
                                 f"--listen-client-urls={etcd}", f"--advertise-client-urls={etcd}",
                                 f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                                 "--unsafe-no-fsync=true", "--log-level=warn"])
            self._wait("etcd", f"{etcd}/health", None, deadline, b'"health":"true"')
            pki = self.pki
            self.server = f"https://127.0.0.1:{api_port}"
            self._spawn("kube-apiserver", [
                f"--etcd-servers={etcd}", "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
                f"--cert-dir={pki}", f"--tls-cert-file={pki}/apiserver.crt",
                f"--tls-private-key-file={pki}/apiserver.key", f"--client-ca-file={pki}/ca.crt",
                "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
                f"--service-account-key-file={pki}/sa.pub",
                f"--service-account-signing-key-file={pki}/sa.key",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--api-audiences=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
                # pods/log: the API server dials the node's InternalIP and kubelet port
                "--kubelet-preferred-address-types=InternalIP",
                f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
                f"--kubelet-client-key={pki}/apiserver-kubelet-client.key",
                f"--kubelet-certificate-authority={pki}/ca.crt",
                "--profiling=false", "--v=0", *self.apiserver_args])
            ctx = self.ssl_context()
            self._wait("kube-apiserver", f"{self.server}/readyz", ctx, deadline, b"ok")
            self.kubeconfig(self.root / "admin.kubeconfig")
            if self.controllers:
                self._start_controllers(deadline)
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - t0
        return self

    def _start_controllers(self, deadline: float) -> None:
        pki = self.pki
        skc = write_kubeconfig(self.root / "scheduler.kubeconfig", self.server, pki,
                               "scheduler")
        ckc = write_kubeconfig(self.root / "controller-manager.kubeconfig", self.server, pki,
                               "controller-manager")
        sched_port, cm_port = free_port(), free_port()
        self._spawn("kube-scheduler", [
            f"--kubeconfig={skc}", f"--authentication-kubeconfig={skc}",
            f"--authorization-kubeconfig={skc}", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={sched_port}",
            f"--cert-dir={self.root / 'scheduler-certs'}", "--v=0"])
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={ckc}", f"--authentication-kubeconfig={ckc}",
            f"--authorization-kubeconfig={ckc}", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={cm_port}",
            f"--cert-dir={self.root / 'controller-manager-certs'}",
            f"--service-account-private-key-file={pki}/sa.key",
            f"--root-ca-file={pki}/ca.crt", "--use-service-account-credentials=true",
            "--service-cluster-ip-range=10.0.0.0/24", "--controllers=*",
            # how often the node lifecycle controller looks at nodes (default 5 s): a node's
            # not-ready taint goes within a second of its Ready status
            "--node-monitor-period=1s", "--v=0"])
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        self._wait("kube-scheduler", f"https://127.0.0.1:{sched_port}/healthz", insecure,
                   deadline, b"ok")
        self._wait("kube-controller-manager", f"https://127.0.0.1:{cm_port}/healthz",
                   insecure, deadline, b"ok")

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def kubeconfig(self, path: Path, *, context: str = "envtest") -> Path:
        """The admin's kubeconfig (system:masters), its context named `context`."""
        return write_kubeconfig(path, self.server, self.pki, "admin", context=context)

    def client(self, *, as_user: str | None = None, as_groups: tuple[str, ...] = ()) -> Any:
        """A `kubernetes` ApiClient as the admin, or impersonating `as_user` (RBAC applies)."""
        from kubernetes import config

        api = config.new_client_from_config(config_file=str(self.root / "admin.kubeconfig"))
        if as_user:
            api.set_default_header("Impersonate-User", as_user)
            for group in as_groups:  # the client sends one header value: the last one wins
                api.set_default_header("Impersonate-Group", group)
        return api

    def stop(self) -> None:
        """Stop every process started here, newest first (SIGTERM, then SIGKILL after 10 s)."""
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        self.procs.clear()

    def alive(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]
