package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// OrgRows answers, for each table of the database at url (as OpenURL
// answers it) with an org_id column, the number of the organization's
// rows and a digest of their contents, and the same of its row of orgs
// and of its members' rows of users: a test compares two of them to
// check that an organization was left unchanged. Tables are found in
// the schema, so a new one is covered without changing the tests.
func OrgRows(t testing.TB, url, orgID string) map[string]string {
	t.Helper()
	ctx := context.Background()
	driver, dsn, list, ph := "pgx", url,
		`SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'org_id' ORDER BY table_name`, "$1"
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		driver, dsn, ph = "sqlite", "file:"+path+"?mode=ro", "?"
		list = `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND p.name = 'org_id' ORDER BY m.name`
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("storetest: open %s: %v", driver, err)
	}
	defer db.Close()
	tables, err := column(ctx, db, list)
	if err != nil {
		t.Fatalf("storetest: list tables: %v", err)
	}
	out := map[string]string{}
	digest := func(name, query string) {
		rows, err := db.QueryContext(ctx, query, orgID)
		if err != nil {
			t.Fatalf("storetest: read %s: %v", name, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("storetest: read %s: %v", name, err)
			}
			lines = append(lines, fmt.Sprintf("%q", vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("storetest: read %s: %v", name, err)
		}
		slices.Sort(lines)
		out[name] = fmt.Sprintf("%d rows %x", len(lines), sha256.Sum256([]byte(strings.Join(lines, "\n"))))
	}
	for _, table := range tables {
		digest(table, `SELECT * FROM `+table+` WHERE org_id = `+ph)
	}
	digest("orgs", `SELECT * FROM orgs WHERE id = `+ph)
	digest("users", `SELECT * FROM users WHERE id IN (SELECT user_id FROM memberships WHERE org_id = `+ph+`)`)
	return out
}

func column(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
