package execute

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/agentproto"
)

// shutdownCatcher runs everything for real except shutdown, which it
// records.
type shutdownCatcher struct {
	mu    sync.Mutex
	calls []Cmd
	real  ExecRunner
}

func (s *shutdownCatcher) Run(ctx context.Context, c Cmd) (Result, error) {
	if c.Path == "shutdown" || c.Path == "shutdown.exe" {
		s.mu.Lock()
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		return Result{}, nil
	}
	return s.real.Run(ctx, c)
}

func runScript(t *testing.T, p agentproto.RunScriptPayload) (Outcome, *shutdownCatcher) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the real script tests use sh")
	}
	r := &shutdownCatcher{}
	e := &Executor{Runner: r, TempDir: t.TempDir()}
	raw, _ := json.Marshal(p)
	return e.Execute(context.Background(), agentproto.Command{ID: "c1", Type: agentproto.TypeRunScript, Payload: raw}), r
}

func TestRunScriptEcho(t *testing.T) {
	for _, lang := range []string{"sh", "bash", ""} {
		o, _ := runScript(t, agentproto.RunScriptPayload{Language: lang, Script: "echo hello from patchd\necho to stderr >&2\n"})
		if o.Status != agentproto.StatusSuccess || o.Result != "hello from patchd\nto stderr\n" || o.ExitCode == nil || *o.ExitCode != 0 || !o.InventoryChanged {
			t.Errorf("%q: %+v", lang, o)
		}
	}
}

func TestRunScriptParameters(t *testing.T) {
	o, _ := runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: `printf '%s|%s|%s' "$Greeting" "$TARGET_HOST" "$_9lives"`,
		Parameters: map[string]string{"Greeting": "hi there; $(rm -rf /)", "TARGET-HOST": "web-01", "9lives": "cat"}})
	if o.Status != agentproto.StatusSuccess || o.Result != "hi there; $(rm -rf /)|web-01|cat" {
		t.Errorf("%+v", o)
	}
}

func TestRunScriptExitCodes(t *testing.T) {
	o, _ := runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: "echo failing; exit 3"})
	if o.Status != agentproto.StatusFailed || *o.ExitCode != 3 || !strings.Contains(o.Result, "failing\nExit code 3.") {
		t.Errorf("failure: %+v", o)
	}
	o, _ = runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: "exit 3", SuccessExitCodes: []int{0, 3}})
	if o.Status != agentproto.StatusSuccess {
		t.Errorf("success code: %+v", o)
	}
	o, r := runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: "exit 194", RebootExitCodes: []int{194}})
	if o.Status != agentproto.StatusSuccess || *o.ExitCode != 194 || !strings.Contains(o.Result, "asks for a restart") {
		t.Errorf("reboot code: %+v", o)
	}
	if len(r.calls) != 1 || strings.Join(r.calls[0].Args, " ") != "-r +1 patchd: restarting as a script asked" {
		t.Errorf("reboot not scheduled: %+v", r.calls)
	}
}

func TestRunScriptOutputCap(t *testing.T) {
	// 200,000 numbered lines: far more than 64 KiB.
	o, _ := runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: "i=0; while [ $i -lt 200000 ]; do echo line$i; i=$((i+1)); done"})
	if o.Status != agentproto.StatusSuccess {
		t.Fatalf("%+v", o.Status)
	}
	if len(o.Result) > DefaultOutputLimit+100 {
		t.Errorf("output is %d bytes", len(o.Result))
	}
	if !strings.HasPrefix(o.Result, "line0\nline1\n") || !strings.HasSuffix(o.Result, "line199999\n") || !strings.Contains(o.Result, "bytes of output omitted") {
		t.Errorf("head or tail lost: %q … %q", o.Result[:40], o.Result[len(o.Result)-40:])
	}
}

func TestRunScriptLanguages(t *testing.T) {
	o, _ := runScript(t, agentproto.RunScriptPayload{Language: "cmd", Script: "echo hi"})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "does not run on") {
		t.Errorf("cmd on unix: %+v", o)
	}
	o, _ = runScript(t, agentproto.RunScriptPayload{Language: "cobol", Script: "x"})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "unknown script language") {
		t.Errorf("unknown: %+v", o)
	}
	for _, tc := range []struct{ goos, lang, want string }{
		{"windows", "", "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File"},
		{"windows", "cmd", "cmd.exe /d /c"},
		{"windows", "python", "python.exe"},
		{"linux", "powershell", "pwsh -NoProfile -NonInteractive -File"},
		{"darwin", "python", "python3"},
	} {
		argv, _, err := interpreter(tc.goos, tc.lang)
		if err != nil || strings.Join(argv, " ") != tc.want {
			t.Errorf("%s %s: %v %v", tc.goos, tc.lang, argv, err)
		}
	}
}

func TestHeadTail(t *testing.T) {
	h := newHeadTail(10)
	h.Write([]byte("abc"))
	if h.String() != "abc" {
		t.Errorf("%q", h.String())
	}
	h.Write([]byte("defghij"))
	if h.String() != "abcdefghij" {
		t.Errorf("%q", h.String())
	}
	for _, c := range "klmnop" {
		h.Write([]byte(string(c)))
	}
	if got := h.String(); got != "abcde\n[… 6 bytes of output omitted …]\nlmnop" {
		t.Errorf("%q", got)
	}
}
