package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestPlanStatsFollowEnrollment (PostgreSQL): a fleet enrolling into an
// empty database has its tables analyzed by the store once 64 endpoints
// enrolled, and again only when four times as many have: a generic plan of
// the enrollment's lookup at 256 endpoints uses the machine id's unique
// index (made with the empty table's statistics it reads every endpoint of
// the organization through another index). Another store's schema in the
// same database is left alone.
func TestPlanStatsFollowEnrollment(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("PostgreSQL's planner statistics")
	}
	t.Parallel()
	ctx := context.Background()
	s, u := storetest.OpenURL(t)
	_, otherURL := storetest.OpenURL(t)
	o := newOrg(t, s, "Growing")
	now := time.Now()
	enrolled := 0
	for _, step := range []struct{ endpoints, analyses int }{{63, 0}, {64, 1}, {255, 1}, {256, 2}} {
		for ; enrolled < step.endpoints; enrolled++ {
			en := store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprintf("m%d", enrolled), Hostname: fmt.Sprintf("h%d", enrolled),
				Platform: "linux", SecretHash: fmt.Sprintf("s%d", enrolled)}
			if _, _, err := s.EnrollEndpoint(ctx, en, now); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.PlanAnalysesForTest(); n != step.analyses {
			t.Fatalf("%d analyses at %d endpoints, want %d", n, step.endpoints, step.analyses)
		}
	}
	if lastAnalyzed(t, otherURL) {
		t.Error("another schema's endpoints were analyzed")
	}
	if plan := genericPlan(t, u, `SELECT id FROM endpoints WHERE org_id = $1 AND machine_uid = $2`); !strings.Contains(plan, "endpoints_org_id_machine_uid_key") {
		t.Errorf("generic plan of the enrollment's lookup at 256 endpoints:\n%s", plan)
	}
}

// genericPlan answers EXPLAIN of query's generic plan (two text
// parameters) on a connection of its own to the database at u.
func genericPlan(t *testing.T, u, query string) string {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE plan_q(text, text) AS ` + query} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE plan_q('a', 'b')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// lastAnalyzed tells whether endpoints in the schema of the database at u
// was ever analyzed.
func lastAnalyzed(t *testing.T, u string) bool {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var analyzed bool
	if err := db.QueryRow(`SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'endpoints'`).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	return analyzed
}
