package collect

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// assertKeys fails unless row has exactly the contract's keys of dataset.
func assertKeys(t *testing.T, dataset string, row map[string]any) {
	t.Helper()
	var got []string
	for k := range row {
		got = append(got, k)
	}
	want := slices.Clone(datasetKeys[dataset])
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s row keys %v, want %v", dataset, got, want)
	}
}

// TestDatasetKeysFollowContract reads sim/DATASETS.md, the contract of the
// report catalog: every section's keys are those of datasetKeys, in order.
func TestDatasetKeysFollowContract(t *testing.T) {
	b, err := os.ReadFile("../../sim/DATASETS.md")
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile("`([a-zA-Z]+)` [snibtd]\\??")
	doc := map[string][]string{}
	for _, section := range strings.Split(string(b), "\n## ")[1:] {
		name, body, _ := strings.Cut(section, "\n")
		var keys []string
		for _, m := range key.FindAllStringSubmatch(body, -1) {
			if !slices.Contains(keys, m[1]) {
				keys = append(keys, m[1])
			}
		}
		doc[strings.TrimSpace(name)] = keys
	}
	for name, keys := range doc {
		if !slices.Equal(datasetKeys[name], keys) {
			t.Errorf("dataset %s: agent keys %v, DATASETS.md %v", name, datasetKeys[name], keys)
		}
	}
	for name := range datasetKeys {
		if _, ok := doc[name]; !ok {
			t.Errorf("dataset %s is not in DATASETS.md", name)
		}
	}
}

func TestConform(t *testing.T) {
	rows, extra := conform("disk-encryption", []map[string]any{{"volume": "/", "encrypted": false, "device": "/dev/sda1"}})
	assertKeys(t, "disk-encryption", rows[0])
	if rows[0]["method"] != nil || rows[0]["volume"] != "/" || !slices.Equal(extra, []string{"device"}) {
		t.Errorf("%v %v", rows, extra)
	}
	if same, _ := conform("not-a-dataset", []map[string]any{{"x": 1}}); same[0]["x"] != 1 {
		t.Errorf("unknown dataset changed: %v", same)
	}
}
