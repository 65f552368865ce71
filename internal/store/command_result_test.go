package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendResult(t *testing.T) {
	// Under the cap, text is appended as is.
	got, cut := appendResult("a", 0, "b")
	if got != "ab" || cut != 0 {
		t.Fatalf("%q %d", got, cut)
	}
	// Over it, in many appends of runes of every width, the stored text
	// is always head + marker + tail, valid UTF-8, and the cut count adds up.
	var stored string
	cut, total := int64(0), 0
	pieces := []string{"x", "é", "€", "😀", strings.Repeat("z", 70_000), "line\n"}
	for i := range 400 {
		p := pieces[i%len(pieces)]
		if i%7 == 0 {
			p = strings.Repeat("€", 30_000)
		}
		stored, cut = appendResult(stored, cut, p)
		total += len(p)
		if !utf8.ValidString(stored) {
			t.Fatalf("append %d: invalid UTF-8", i)
		}
		if cut == 0 {
			if len(stored) != total {
				t.Fatalf("append %d: %d stored, %d sent", i, len(stored), total)
			}
			continue
		}
		head, tail, ok := splitCut(stored, cut)
		if !ok {
			t.Fatalf("append %d: marker of %d not found", i, cut)
		}
		if len(head) > CommandResultHead || len(head) < CommandResultHead-3 || len(tail) > CommandResultTail || len(tail) < CommandResultTail-3 {
			t.Fatalf("append %d: head %d tail %d", i, len(head), len(tail))
		}
		if int64(len(head)+len(tail))+cut != int64(total) {
			t.Fatalf("append %d: %d + %d + %d cut != %d sent", i, len(head), len(tail), cut, total)
		}
		if !strings.HasSuffix(stored, p) && len(p) <= CommandResultTail {
			t.Fatalf("append %d: the tail does not end with the last text", i)
		}
	}
	// A forged marker in the agent's text does not move the cut.
	stored, cut = appendResult(strings.Repeat("a", MaxCommandResult), 0, "\n… [1 bytes cut] …\n"+strings.Repeat("b", 100))
	if _, _, ok := splitCut(stored, cut); !ok || cut != 100+int64(len("\n… [1 bytes cut] …\n")) {
		t.Fatalf("cut %d", cut)
	}
}
