package api

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
)

// handleOperatorCallback receives an operator's report about a payment
// (POST /callbacks/{operator}). The operator's adapter authenticates and
// reads it; the payment is then settled like any other outcome, so a
// callback racing a poll or the expiry check still makes one transition.
// The operator in the path is the one whose adapter authenticated the
// callback, and a callback settles only that operator's payments.
// Operators answer nobody's error bodies, but the envelope keeps logs and
// tools uniform.
func (s *Server) handleOperatorCallback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := payment.Operator(strings.ToUpper(r.PathValue("operator")))
		reader, ok := s.callbacks[op]
		if !ok {
			writeProblem(w, http.StatusNotFound, codeNotFound, "this operator sends no callbacks here")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			writeProblem(w, http.StatusRequestEntityTooLarge, codeTooLarge, errTooLarge.Error())
			return
		}
		cb, err := reader.ReadCallback(r.Header, body)
		if errors.Is(err, operator.ErrCallbackRejected) {
			// Anyone can post here: at most one line a second, or a flood
			// of forgeries would fill the disk (each request still has
			// its access line and metric).
			s.rejectedCallbacks.Do(func() {
				s.log.Warn("operator callback rejected (logged at most once a second)", "request_id", requestID(r.Context()), "operator", r.PathValue("operator"), "err", err)
			})
			writeProblem(w, http.StatusUnauthorized, codeUnauthorized, "callback rejected")
			return
		}
		if err == nil {
			err = s.payments.HandleCallback(r.Context(), op, cb)
		}
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "received"})
	})
}
