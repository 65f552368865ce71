package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the result text stored per command. An agent appends to it with
// each status report; past MaxCommandResult bytes the stored text keeps its
// first CommandResultHead bytes and its last CommandResultTail bytes with a
// marker between them that says how many bytes were cut
// ("\n… [N bytes cut] …\n"), so the start (what ran) and the end (how it
// ended) stay readable and a runs answer stays small.
const (
	CommandResultHead = 64 << 10
	CommandResultTail = 192 << 10
	MaxCommandResult  = CommandResultHead + CommandResultTail
)

func cutMarker(n int64) string { return "\n… [" + strconv.FormatInt(n, 10) + " bytes cut] …\n" }

// appendResult appends chunk to a command's stored result, of which cut
// bytes were cut before, and answers the new text and count of bytes cut.
func appendResult(stored string, cut int64, chunk string) (string, int64) {
	if chunk == "" {
		return stored, cut
	}
	if cut == 0 {
		full := stored + chunk
		if len(full) <= MaxCommandResult {
			return full, 0
		}
		head := prefixRunes(full, CommandResultHead)
		tail := suffixRunes(full, CommandResultTail)
		cut = int64(len(full) - len(head) - len(tail))
		return head + cutMarker(cut) + tail, cut
	}
	head, tail, ok := splitCut(stored, cut)
	if !ok {
		// Not the shape this code writes (changed by hand): keep its start
		// as the head.
		head, tail = prefixRunes(stored, CommandResultHead), ""
		cut += int64(len(stored) - len(head))
	}
	tail += chunk
	if len(tail) > CommandResultTail {
		kept := suffixRunes(tail, CommandResultTail)
		cut += int64(len(tail) - len(kept))
		tail = kept
	}
	return head + cutMarker(cut) + tail, cut
}

// splitCut finds the head and tail of a stored result around the marker of
// cut bytes. The head is CommandResultHead bytes less at most three (a rune
// not split), so the marker is looked for only there: the agent's own text
// cannot forge it.
func splitCut(stored string, cut int64) (head, tail string, ok bool) {
	m := cutMarker(cut)
	for at := CommandResultHead; at >= CommandResultHead-utf8.UTFMax+1 && at >= 0; at-- {
		if at <= len(stored) && strings.HasPrefix(stored[at:], m) {
			return stored[:at], stored[at+len(m):], true
		}
	}
	return "", "", false
}

// prefixRunes is the longest prefix of s of at most n bytes that does not
// split a rune.
func prefixRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// suffixRunes is the longest suffix of s of at most n bytes that does not
// split a rune.
func suffixRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	at := len(s) - n
	for at < len(s) && !utf8.RuneStart(s[at]) {
		at++
	}
	return s[at:]
}

// reportHash names a status report for the de-duplication of retries.
func reportHash(st CommandStatus) string {
	exit := "-"
	if st.ExitCode != nil {
		exit = strconv.Itoa(*st.ExitCode)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s", st.Status, exit, st.Result))
	return hex.EncodeToString(sum[:])
}
