package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/lockedbuf"
	"github.com/patchd/patchd/internal/store"
)

// updateRig is what the real agent's self-update tests share: a server
// that serves agent releases from its own folder, a release key, and the
// real agent built into dir/bin, run on this machine with a recording
// apt-get (fakeAptGet) and enrolled.
type updateRig struct {
	t        *testing.T
	e        *apitest.Env
	ctx      context.Context
	dir      string // the test's folder
	agentDir string // the server's agent distribution folder
	exe      string // the running agent's binary
	state    string // its state folder
	pub      ed25519.PublicKey
	priv     ed25519.PrivateKey
	dist     *agentdist.Store
	p        agentdist.Platform // this machine's
	env      []string           // the agent's environment
	id       string             // its endpoint, once enrolled
}

// newUpdateRig starts the server and makes the release key; the running
// agent is the test's to build (rig.build or buildFromCommit into
// rig.exe) before rig.enroll. It skips where CI does not run.
func newUpdateRig(t *testing.T) *updateRig {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the real-machine check runs on Linux amd64/arm64, where CI runs")
	}
	r := &updateRig{t: t, ctx: context.Background(), dir: t.TempDir(), agentDir: t.TempDir(),
		p: agentdist.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}}
	r.e = apitest.New(t, func(c *config.Config) { c.AgentDir = r.agentDir })
	var err error
	if r.pub, r.priv, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	if r.dist, err = agentdist.NewStore(r.agentDir); err != nil {
		t.Fatal(err)
	}
	r.exe = filepath.Join(r.dir, "bin", "patchd-agent")
	os.MkdirAll(filepath.Dir(r.exe), 0o755)
	r.state = filepath.Join(r.dir, "state")
	r.env, _ = fakeAptGet(t, r.dir)
	return r
}

// releaseKey is the release key as an agent has it built in.
func (r *updateRig) releaseKey() string { return base64.StdEncoding.EncodeToString(r.pub) }

// build compiles this checkout's agent into out as version, with the
// release key built in, and answers its SHA-256.
func (r *updateRig) build(out, version string) string {
	r.t.Helper()
	buildVersion(r.t, out, version, r.releaseKey())
	sum, err := agentdist.FileSHA256(out)
	if err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// release publishes file as this platform's agent and signs the release
// of version with the rig's key, trusted.
func (r *updateRig) release(file, version string) {
	r.t.Helper()
	b, err := r.dist.Publish(file, r.p)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sign(version, b.SHA256)
}

// sign signs the release of version as a file whose SHA-256 is sum.
func (r *updateRig) sign(version, sum string) {
	r.t.Helper()
	if _, err := r.dist.SetRelease(r.p, version, agentproto.SignRelease(r.priv, r.p.OS, r.p.Arch, version, sum), []ed25519.PublicKey{r.pub}); err != nil {
		r.t.Fatal(err)
	}
}

// releaseScript serves a shell script as the signed release of version,
// answering `version` as that version would (the release tooling refuses
// a script: it is put in place directly); run, it does what body says. It
// answers the script's SHA-256.
func (r *updateRig) releaseScript(version, body string) string {
	r.t.Helper()
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo \"patchd-agent " + version + " " + r.p.String() + "\"; exit 0; fi\n" + body
	file := filepath.Join(r.dir, "release-"+version)
	if err := os.WriteFile(file, []byte(script), 0o755); err != nil {
		r.t.Fatal(err)
	}
	sum, err := agentdist.FileSHA256(file)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(file, filepath.Join(r.agentDir, r.p.OS+"-"+r.p.Arch, r.p.FileName())); err != nil {
		r.t.Fatal(err)
	}
	r.sign(version, sum)
	return sum
}

// enroll enrolls the built agent and sets the organization's agent policy
// to "latest".
func (r *updateRig) enroll() {
	r.t.Helper()
	enrollAgent(r.t, r.e, r.exe, r.state, r.env)
	st, err := agent.LoadState(r.state)
	if err != nil {
		r.t.Fatal(err)
	}
	r.id = st.EndpointID
	if err := r.e.Store.SetAgentPolicy(r.ctx, &store.AuditEntry{OrgID: r.e.Org.ID, Actor: "test", Action: "agent.policy", TargetType: "org"},
		r.e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyLatest}, time.Now()); err != nil {
		r.t.Fatal(err)
	}
}

// run starts the agent (`run --state … args…`) with env, its output to
// out, and answers it and a channel that gets its end.
func (r *updateRig) run(env []string, out io.Writer, args ...string) (*exec.Cmd, chan error) {
	r.t.Helper()
	cmd := exec.Command(r.exe, append([]string{"run", "--state", r.state}, args...)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, exited
}

// kick ends the agent's long poll (a scan request), so that the next
// check-in and what follows it come now.
func (r *updateRig) kick() {
	r.t.Helper()
	if r.e.Server.Presence().Polling(r.id) {
		if err := r.e.Admin.ScanEndpoint(r.ctx, r.id); err != nil {
			r.t.Fatal(err)
		}
	}
}

// version is the agent version the server has for the endpoint.
func (r *updateRig) version() string {
	d, err := r.e.Admin.GetEndpoint(r.ctx, r.id)
	if err != nil || d.AgentVersion == nil {
		return ""
	}
	return *d.AgentVersion
}

// reported tells whether the server lists the endpoint's update failure,
// the only one, as one of version with a reason containing why.
func (r *updateRig) reported(version, why string) bool {
	r.kick()
	v, err := r.e.Admin.AgentVersions(r.ctx)
	return err == nil && len(v.Failures) == 1 && v.Failures[0].EndpointID == r.id && v.Failures[0].Version == version &&
		strings.Contains(v.Failures[0].Reason, why)
}

// waitFor polls cond for up to three minutes; exited, when not nil, is an
// agent that must not end meanwhile.
func waitFor(t *testing.T, what string, exited <-chan error, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("%s: the agent exited: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 3 minutes", what)
		}
	}
}

// ended tells, without waiting, whether exited got the agent's end.
func ended(exited <-chan error) bool {
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// goBuildAgent builds ./cmd/patchd-agent of the module in dir (this
// checkout when empty) into out as version, with the release key built in.
func goBuildAgent(t *testing.T, dir, out, version, releaseKey string, env ...string) {
	t.Helper()
	pkg := "github.com/patchd/patchd/cmd/patchd-agent"
	if dir != "" {
		pkg = "./cmd/patchd-agent"
	}
	cmd := exec.Command("go", "build", "-o", out, "-ldflags",
		"-X github.com/patchd/patchd/agent.Version="+version+" -X github.com/patchd/patchd/agent.ReleaseKey="+releaseKey, pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", version, err, b)
	}
}

// enrolledAgent is patchd-agent of this checkout, built and enrolled
// with a server that the test started.
type enrolledAgent struct {
	e     *apitest.Env
	bin   string
	state string
	// env puts the apt-get stand-in of fakeAptGet first on the PATH, and
	// aptCalls is the file it records its calls in.
	env      []string
	aptCalls string
}

// newEnrolledAgent starts a server with opts, and builds and enrolls
// patchd-agent with it; the test is skipped off Linux, where the
// real-machine checks do not run.
func newEnrolledAgent(t *testing.T, opts ...apitest.Option) *enrolledAgent {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the real-machine check runs on Linux, where CI runs")
	}
	a := &enrolledAgent{e: apitest.New(t, opts...)}
	dir := t.TempDir()
	a.bin = build(t, dir, "cmd/patchd-agent")
	a.state = filepath.Join(dir, "state")
	a.env, a.aptCalls = fakeAptGet(t, dir)
	enrollAgent(t, a.e, a.bin, a.state, a.env)
	return a
}

// enrollAgent enrolls `bin` with state in e's organization, with env (the
// test's own environment when nil).
func enrollAgent(t *testing.T, e *apitest.Env, bin, state string, env []string) {
	t.Helper()
	enroll := exec.Command(bin, "enroll", "--state", state, "--server", e.URL, "--token", e.EnrollToken)
	enroll.Env = env
	if out, err := enroll.CombinedOutput(); err != nil {
		t.Fatalf("patchd-agent enroll: %v\n%s", err, out)
	}
}

// runAgent runs `bin run --state state` with env until the test ends;
// then it is stopped and, when the test failed, its output logged. It
// answers the command, a channel that gets its end, and its output as it
// comes.
func runAgent(t *testing.T, bin, state string, env []string) (*exec.Cmd, <-chan error, *lockedbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--state", state)
	cmd.Env = env
	exited, logs := startLogged(t, cmd, func(out string) { t.Logf("agent log:\n%s", out) })
	return cmd, exited, logs
}

// startLogged starts cmd with its output going to the buffer it answers,
// and answers a channel that gets cmd's end. When the test ends, cmd is
// killed and waited for, and when the test failed, report is given the
// output.
func startLogged(t *testing.T, cmd *exec.Cmd, report func(output string)) (<-chan error, *lockedbuf.Buffer) {
	t.Helper()
	out := &lockedbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	waited := make(chan struct{})
	go func() {
		exited <- cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-waited
		if t.Failed() {
			report(out.String())
		}
	})
	return exited, out
}

// exportCommit writes the tree of an earlier commit of this repository
// (git archive; the repository is not changed) into a new folder and
// answers it. A clone without that history fails the test.
func exportCommit(t *testing.T, commit string) string {
	t.Helper()
	src := t.TempDir()
	archive := exec.Command("git", "-C", agentdist.ModuleRoot("."), "archive", "--format=tar", commit)
	var stderr strings.Builder
	archive.Stderr = &stderr
	tarball, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive %s (the test needs the repository's history): %v %s", commit, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = bytes.NewReader(tarball)
	if b, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("untar %s: %v %s", commit, err, b)
	}
	return src
}
