package slots

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The journal is the durable store of the offline queue: an append-only
// file of framed records, each
//
//	length  uint32, big-endian: bytes of payload
//	crc     uint32, big-endian: CRC-32C (Castagnoli) of payload
//	payload JSON (a journalRecord)
//
// after an 8-byte file header "xpjrnl1\n". Every append is fsynced before
// it returns, so a record the caller was told about survives a crash. A
// crash in the middle of an append leaves a torn last record (short, or
// failing its CRC); opening the journal keeps every complete record before
// it and truncates the rest. Compaction rewrites the live records into a
// new file and renames it over the old one, so a crash leaves either file
// whole.

const journalHeader = "xpjrnl1\n"

// maxRecordSize bounds one record's payload; SDK events are a few KiB.
const maxRecordSize = 1 << 20

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// journalRecord is one record of the journal: an enqueued event, the
// acknowledgment of one, or (first record of a compacted file) the next
// sequence number, so numbers never go back after compaction.
type journalRecord struct {
	Op      string `json:"op"` // "event", "ack" or "meta"
	Event   *Event `json:"event,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`      // ack: the acknowledged event
	NextSeq uint64 `json:"next_seq,omitempty"` // meta
}

const (
	opEvent = "event"
	opAck   = "ack"
	opMeta  = "meta"
)

// journal is not safe for concurrent use; the Queue serializes access.
type journal struct {
	path   string
	f      *os.File
	size   int64 // offset of the end of the last complete record
	broken error // set when a failed append could not be undone
}

// openJournal opens (creating when missing) the journal at path, replays
// it, truncates a torn tail, and returns the complete records in order.
func openJournal(path string) (*journal, []journalRecord, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("slots: journal: %w", err)
	}
	j := &journal{path: path, f: f}
	recs, err := j.replay()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return j, recs, nil
}

// replay reads every complete record, then truncates the file after the
// last one and positions the file for appends.
func (j *journal) replay() ([]journalRecord, error) {
	st, err := j.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("slots: journal: %w", err)
	}
	if st.Size() < int64(len(journalHeader)) {
		// New, or a crash before the header was synced: start over.
		if err := j.reset(); err != nil {
			return nil, err
		}
		return nil, nil
	}
	r := bufio.NewReader(io.NewSectionReader(j.f, 0, st.Size()))
	hdr := make([]byte, len(journalHeader))
	if _, err := io.ReadFull(r, hdr); err != nil || string(hdr) != journalHeader {
		return nil, fmt.Errorf("slots: journal %s: not a journal file (bad header)", j.path)
	}
	off := int64(len(journalHeader))
	var recs []journalRecord
	var frame [8]byte
	for {
		if _, err := io.ReadFull(r, frame[:]); err != nil {
			break // clean end, or a torn frame header
		}
		n := binary.BigEndian.Uint32(frame[0:4])
		sum := binary.BigEndian.Uint32(frame[4:8])
		if n == 0 || n > maxRecordSize {
			break
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			break // torn payload
		}
		if crc32.Checksum(payload, crc32c) != sum {
			break // torn or corrupted: nothing after it can be trusted
		}
		off += int64(len(frame)) + int64(n)
		var rec journalRecord
		if err := json.Unmarshal(payload, &rec); err != nil {
			// Intact but unreadable (written by a newer SDK?): skip it.
			continue
		}
		recs = append(recs, rec)
	}
	if off != st.Size() {
		if err := j.f.Truncate(off); err != nil {
			return nil, fmt.Errorf("slots: journal: truncate torn tail: %w", err)
		}
		if err := fsync(j.f); err != nil {
			return nil, fmt.Errorf("slots: journal: %w", err)
		}
	}
	j.size = off
	return recs, nil
}

// reset makes the file an empty journal: just the header, synced.
func (j *journal) reset() error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("slots: journal: %w", err)
	}
	if _, err := j.f.WriteAt([]byte(journalHeader), 0); err != nil {
		return fmt.Errorf("slots: journal: %w", err)
	}
	if err := fsync(j.f); err != nil {
		return fmt.Errorf("slots: journal: %w", err)
	}
	j.size = int64(len(journalHeader))
	return nil
}

func encodeRecord(rec journalRecord) ([]byte, error) {
	payload, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	if len(payload) > maxRecordSize {
		return nil, fmt.Errorf("slots: journal: record of %d bytes exceeds %d", len(payload), maxRecordSize)
	}
	buf := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[4:8], crc32.Checksum(payload, crc32c))
	return append(buf, payload...), nil
}

// append writes rec and fsyncs it. When the write or the sync fails, the
// file is cut back to its previous end so a half-written record cannot be
// followed by later ones.
func (j *journal) append(rec journalRecord) error {
	if j.broken != nil {
		return j.broken
	}
	buf, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if _, err := j.f.WriteAt(buf, j.size); err != nil {
		return j.undo(err)
	}
	if err := fsync(j.f); err != nil {
		return j.undo(err)
	}
	j.size += int64(len(buf))
	return nil
}

func (j *journal) undo(cause error) error {
	if err := j.f.Truncate(j.size); err != nil {
		j.broken = fmt.Errorf("slots: journal unusable after a failed write (%v; truncate: %v); reopen it", cause, err)
		return j.broken
	}
	return fmt.Errorf("slots: journal: %w", cause)
}

// compact replaces the journal with one holding recs only: written to a
// temporary file, synced, renamed over the journal. The file handle is
// closed across the rename, which Windows requires.
func (j *journal) compact(recs []journalRecord) error {
	if j.broken != nil {
		return j.broken
	}
	buf := []byte(journalHeader)
	for _, rec := range recs {
		b, err := encodeRecord(rec)
		if err != nil {
			return err
		}
		buf = append(buf, b...)
	}
	if err := j.f.Close(); err != nil {
		return j.reopen(fmt.Errorf("slots: journal: %w", err))
	}
	if err := writeFileAtomic(j.path, buf); err != nil {
		return j.reopen(fmt.Errorf("slots: journal: compact: %w", err))
	}
	return j.reopen(nil)
}

// reopen opens the journal file again after compact closed it, positioned
// at its end, and returns cause.
func (j *journal) reopen(cause error) error {
	f, err := os.OpenFile(j.path, os.O_RDWR, 0o600)
	if err != nil {
		j.broken = fmt.Errorf("slots: journal: reopen after compaction: %w", err)
		return j.broken
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		j.broken = fmt.Errorf("slots: journal: %w", err)
		return j.broken
	}
	j.f, j.size = f, st.Size()
	return cause
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
