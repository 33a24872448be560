package slots

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testEvent(seq uint64, size int) *Event {
	return &Event{
		Seq: seq, Kind: EventClick, Path: "/v1/sdk/click",
		Body:           json.RawMessage(`{"pad":"` + strings.Repeat("x", size) + `"}`),
		IdempotencyKey: "k" + itoa(int(seq)),
		EnqueuedAt:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// writeJournal appends recs to a new journal at path and returns the file
// offset at which each record ends.
func writeJournal(t *testing.T, path string, recs []journalRecord) []int64 {
	t.Helper()
	j, got, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("new journal has %d records", len(got))
	}
	ends := make([]int64, len(recs))
	for i, r := range recs {
		if err := j.append(r); err != nil {
			t.Fatal(err)
		}
		ends[i] = j.size
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	return ends
}

func sampleRecords() []journalRecord {
	var recs []journalRecord
	for i := uint64(1); i <= 10; i++ {
		recs = append(recs, journalRecord{Op: opEvent, Event: testEvent(i, int(i*2))})
		if i%3 == 0 {
			recs = append(recs, journalRecord{Op: opAck, Seq: i - 1})
		}
	}
	return recs
}

func recordsJSON(t *testing.T, recs []journalRecord) string {
	t.Helper()
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A crash can cut the journal anywhere in its last append. Replay must
// return exactly the records that were complete before the cut, leave the
// file ending after the last of them, and accept new appends after it.
func TestJournalReplayAfterTruncationAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	recs := sampleRecords()
	ends := writeJournal(t, full, recs)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != ends[len(ends)-1] {
		t.Fatalf("file is %d bytes, last record ends at %d", len(data), ends[len(ends)-1])
	}
	for cut := 0; cut <= len(data); cut++ {
		path := filepath.Join(dir, "cut")
		if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		complete := 0
		for complete < len(ends) && ends[complete] <= int64(cut) {
			complete++
		}
		j, got, err := openJournal(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if want := recordsJSON(t, recs[:complete]); recordsJSON(t, got) != want && !(complete == 0 && len(got) == 0) {
			t.Fatalf("cut at %d: replayed %d records, want %d", cut, len(got), complete)
		}
		wantSize := int64(len(journalHeader))
		if complete > 0 {
			wantSize = ends[complete-1]
		}
		if st, _ := os.Stat(path); st.Size() != wantSize {
			t.Fatalf("cut at %d: file is %d bytes after replay, want %d", cut, st.Size(), wantSize)
		}
		// The journal goes on after the torn record.
		extra := journalRecord{Op: opAck, Seq: 99}
		if err := j.append(extra); err != nil {
			t.Fatal(err)
		}
		j.close()
		_, again, err := openJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := recordsJSON(t, append(append([]journalRecord(nil), recs[:complete]...), extra)); recordsJSON(t, again) != want {
			t.Fatalf("cut at %d: after a new append replay gives %s\nwant %s", cut, recordsJSON(t, again), want)
		}
	}
}

// A flipped bit fails the record's checksum: the records before it are
// kept, the damaged one and everything after it are dropped.
func TestJournalStopsAtCorruptRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	recs := sampleRecords()
	ends := writeJournal(t, path, recs)
	data, _ := os.ReadFile(path)
	data[ends[4]+12] ^= 0x20 // inside the payload of record 5
	os.WriteFile(path, data, 0o600)
	_, got, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if recordsJSON(t, got) != recordsJSON(t, recs[:5]) {
		t.Fatalf("replayed %d records, want the 5 before the damage", len(got))
	}
}

func TestJournalRefusesForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	os.WriteFile(path, []byte("some other file that is not a journal"), 0o600)
	if _, _, err := openJournal(path); err == nil {
		t.Fatal("opened a foreign file as a journal")
	}
	// And left it alone.
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte("some other")) {
		t.Fatal("foreign file was modified")
	}
}

func TestJournalCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	writeJournal(t, path, sampleRecords())
	j, _, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	keep := []journalRecord{{Op: opMeta, NextSeq: 11}, {Op: opEvent, Event: testEvent(10, 3)}}
	if err := j.compact(keep); err != nil {
		t.Fatal(err)
	}
	if err := j.append(journalRecord{Op: opAck, Seq: 10}); err != nil {
		t.Fatal(err)
	}
	j.close()
	_, got, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	want := append(keep, journalRecord{Op: opAck, Seq: 10})
	if recordsJSON(t, got) != recordsJSON(t, want) {
		t.Fatalf("after compaction: %s\nwant %s", recordsJSON(t, got), recordsJSON(t, want))
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// Whatever follows the header (a damaged disk, another program writing
// there), opening the journal keeps a valid prefix, never fails, and
// leaves a file that reopens to the same records.
func FuzzJournalReplay(f *testing.F) {
	var good []byte
	for _, r := range sampleRecords()[:3] {
		b, _ := encodeRecord(r)
		good = append(good, b...)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte{0, 0, 0, 5, 1, 2, 3, 4, '{', '}'})
	f.Fuzz(func(t *testing.T, tail []byte) {
		path := filepath.Join(t.TempDir(), "j")
		os.WriteFile(path, append([]byte(journalHeader), tail...), 0o600)
		j, recs, err := openJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		j.close()
		_, again, err := openJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		if recordsJSON(t, again) != recordsJSON(t, recs) {
			t.Fatalf("reopen gives %s, first open %s", recordsJSON(t, again), recordsJSON(t, recs))
		}
	})
}
