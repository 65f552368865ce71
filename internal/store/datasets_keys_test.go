package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/patchd/patchd/sim"
)

// wantKeys is what decodeKeys must answer: encoding/json's decoding with
// the other keys deleted.
func wantKeys(t testing.TB, plain []byte, keys []string) ([]map[string]any, error) {
	var rows []map[string]any
	if err := json.Unmarshal(plain, &rows); err != nil {
		return nil, err
	}
	for _, r := range rows {
		maps.DeleteFunc(r, func(k string, _ any) bool { return !slices.Contains(keys, k) })
	}
	return rows, nil
}

// TestDecompressKeys: every dataset of simulated endpoints, compressed as
// stored, decodes with some of its keys as encoding/json decodes it.
func TestDecompressKeys(t *testing.T) {
	for i := range 12 {
		for name, rows := range sim.Generate(1, i).Datasets {
			plain, _ := json.Marshal(rows)
			blob, err := compressJSON(plain)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, r := range rows {
				for k := range r {
					if !slices.Contains(all, k) {
						all = append(all, k)
					}
				}
			}
			slices.Sort(all)
			for _, keys := range [][]string{all, all[:len(all)/2], append(all[len(all)/2:], "missing"), {}} {
				want, err := wantKeys(t, plain, keys)
				if err != nil {
					t.Fatal(err)
				}
				got, err := decompressKeys(blob, keys)
				if err != nil {
					t.Fatalf("%s of %d, keys %v: %v", name, i, keys, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s of %d, keys %v:\n got %v\nwant %v", name, i, keys, got, want)
				}
			}
		}
	}
}

func FuzzDecodeKeys(f *testing.F) {
	for _, s := range []string{`[]`, `null`, ` [ {"a":1,"b":"x"} , null, {} ] `, `[{"a":{"b":[1,2,{"c":null}]},"b":true,"c":false}]`,
		`[{"a":"\u00e9\n\"","b\u0061":-1.5e3,"a":"again"}]`, `[{"a":"C:\\Windows\/x\ud83d\ude00\ud83d \udc00x\t\b\f\r\u0000"}]`, `[{"a":"\'"}]`, `[{"a":1e400}]`, `[1]`, `{"a":1}`, `[{"a":"\xff"}]`, `[{"b":[1,}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys := []string{"a", "b", "ba"}
		want, wantErr := wantKeys(t, b, keys)
		got, err := decodeKeys(b, keys)
		if wantErr != nil {
			return // decodeKeys may be more lenient with the values it skips
		}
		if err != nil {
			t.Fatalf("%q: %v; encoding/json decodes it", b, err)
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}
