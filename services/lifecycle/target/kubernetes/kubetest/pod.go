package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// podScript gives a kapp-controller process what its pod gives it at
// paths compiled into kapp-controller and client-go, in a private mount
// namespace (unshare --user --map-root-user --mount), so nothing outside
// changes:
//
//   - /home/kapp-controller, writable (an emptyDir shared by both
//     containers of its Deployment): the aggregated API server writes its
//     self-signed serving certificate to
//     /home/kapp-controller/kc-agg-api-selfsigned-certs;
//   - /etc/pki/tls/certs/ca-bundle.crt.orig (from its image): at start the
//     sidecar writes ca-bundle.crt as that file plus the caCerts of the
//     kapp-controller-config Secret, and fails without it;
//   - /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}
//     (the projected service account token): its in-cluster client config
//     and the aggregated API server's delegated authentication read them.
//
// /etc and /var/run become overlays whose writes land in the process's own
// tmpfs; SSL_CERT_FILE points the Carvel binaries at the written bundle.
//
// Arguments: $1 a directory for the overlays, $2 the pod's home, $3 the
// service account files; the rest is the command.
const podScript = `set -e
fs=$1 home=$2 sa=$3
shift 3
mount -t tmpfs tmpfs "$fs"
for d in /etc "$(readlink -f /var/run)"; do
  n=$(echo "$d" | tr / _)
  mkdir "$fs/upper$n" "$fs/work$n"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$fs/upper$n,workdir=$fs/work$n" "$d"
done
mkdir -p /etc/pki/tls/certs /var/run/secrets/kubernetes.io/serviceaccount
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt.orig
else
  : > /etc/pki/tls/certs/ca-bundle.crt.orig
fi
cp /etc/pki/tls/certs/ca-bundle.crt.orig /etc/pki/tls/certs/ca-bundle.crt
cp "$sa"/token "$sa"/ca.crt "$sa"/namespace /var/run/secrets/kubernetes.io/serviceaccount/
mount --bind "$home" /home
exec "$@"
`

// podHome is where the pod's home is mounted inside the namespace.
const podHome = "/home/kapp-controller"

// podProcess is one container of kapp-controller's pod, run as a process
// in its own mount namespace and process group.
type podProcess struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process exited
	err  error         // its exit, once done is closed
}

// startPodProcess starts bin with args as container name of the pod whose
// files live in dir.
func startPodProcess(dir, name string, env []string, bin string, args ...string) (*podProcess, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("kapp-controller runs in a private mount namespace and needs unshare (util-linux): %w", err)
	}
	fs := filepath.Join(dir, name+"-fs")
	if err := os.MkdirAll(fs, 0o700); err != nil {
		return nil, err
	}
	p := &podProcess{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	argv := append([]string{"--user", "--map-root-user", "--mount", "--", "sh", "-c", podScript, name,
		fs, filepath.Join(dir, "home"), filepath.Join(dir, "serviceaccount"), bin}, args...)
	p.cmd = exec.Command(unshare, argv...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Its own process group, so Stop ends the Carvel binaries it runs too;
	// killed with the test process.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports the process's end, nil while it runs.
func (p *podProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%w): %s", p.name, p.err, p.tail())
	default:
		return nil
	}
}

// tail is the end of the process's log, for error messages.
func (p *podProcess) tail() string {
	raw, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// stop kills the process group and waits for the process.
func (p *podProcess) stop() {
	if p == nil {
		return
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}
