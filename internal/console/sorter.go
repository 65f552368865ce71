package console

import "net/url"

// sorter is a list's order as its column headers link it: the key sorted
// by, whether reversed, and the list's address and filters to keep.
type sorter struct {
	Path    string     // the list's address
	Filters url.Values // kept in every link (without sort and order)
	Key     string     // the column sorted by; "" for the default
	Desc    bool
	// DefaultKey and DefaultDesc are the order without sort.
	DefaultKey  string
	DefaultDesc bool
}

// newSorter reads sort and order from q (validated by the caller's list).
func newSorter(path string, q url.Values, filters []string, defaultKey string, defaultDesc bool) sorter {
	s := sorter{Path: path, Filters: url.Values{}, Key: q.Get("sort"), DefaultKey: defaultKey, DefaultDesc: defaultDesc}
	for _, k := range filters {
		if v := q.Get(k); v != "" {
			s.Filters.Set(k, v)
		}
	}
	switch q.Get("order") {
	case "desc":
		s.Desc = true
	case "asc":
	default:
		s.Desc = s.Key == "" && defaultDesc
	}
	return s
}

func (s sorter) key() string {
	if s.Key == "" {
		return s.DefaultKey
	}
	return s.Key
}

// SortLink is the address of the list sorted by a column: in its first
// direction, or reversed when it is sorted by that column already.
func (s sorter) SortLink(key string) string {
	v := url.Values{}
	for k, x := range s.Filters {
		v[k] = x
	}
	v.Set("sort", key)
	desc := key == s.DefaultKey && s.DefaultDesc
	if s.key() == key {
		desc = !s.Desc
	}
	if desc {
		v.Set("order", "desc")
	} else {
		v.Set("order", "asc")
	}
	return s.Path + "?" + v.Encode()
}

// SortState is a column's aria-sort value.
func (s sorter) SortState(key string) string {
	switch {
	case s.key() != key:
		return ""
	case s.Desc:
		return "descending"
	}
	return "ascending"
}
