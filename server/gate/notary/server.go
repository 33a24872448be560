package notary

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
)

// Handler answers lookups as Apple's service does, from has: a record
// has reports true for is found with ticket as its signed ticket, every
// other one is NOT_FOUND. Test mode's sandbox serves it.
func Handler(has func(recordName string) bool, ticket []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var req struct {
			Records []struct {
				RecordName string `json:"recordName"`
			} `json:"records"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req) != nil || len(req.Records) > 100 {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"serverErrorCode": "BAD_REQUEST", "reason": "expected {\"records\":[{\"recordName\":…}]}"})
			return
		}
		out := make([]map[string]any, 0, len(req.Records))
		for _, rec := range req.Records {
			if has(rec.RecordName) {
				out = append(out, map[string]any{
					"recordName": rec.RecordName, "recordType": "DeveloperIDTicket", "deleted": false,
					"fields": map[string]any{"signedTicket": map[string]string{"type": "BYTES", "value": base64.StdEncoding.EncodeToString(ticket)}},
				})
				continue
			}
			out = append(out, map[string]any{"recordName": rec.RecordName, "reason": "Record not found", "serverErrorCode": "NOT_FOUND"})
		}
		json.NewEncoder(w).Encode(map[string]any{"records": out})
	})
}
