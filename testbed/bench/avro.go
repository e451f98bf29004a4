package main

import (
	"encoding/binary"
	"math"
)

// The loader encodes the simulator's Avro values (audit/demo/sim OrderSchema
// and JoinedSchema) by hand: goavro's generic encoder would make loading ten
// million records CPU-bound in the loader instead of the brokers. The
// encoding is checked against goavro in avro_test.go.

// appendLong appends an Avro long (zig-zag varint).
func appendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64((v<<1)^(v>>63)))
}

// appendString appends an Avro string.
func appendString(b []byte, s string) []byte {
	b = appendLong(b, int64(len(s)))
	return append(b, s...)
}

// appendDouble appends an Avro double.
func appendDouble(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// frame starts a Confluent wire-format value: magic 0 and the schema id.
func frame(b []byte, id uint32) []byte {
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, id)
}

// appendOrder appends a framed Order value (sim.OrderSchema): customer nil
// is a null customerId.
func appendOrder(b []byte, customer *string, orderID string, amount, ts int64) []byte {
	b = frame(b, orderSchemaID)
	if customer == nil {
		b = appendLong(b, 0)
	} else {
		b = appendLong(b, 1)
		b = appendString(b, *customer)
	}
	b = appendString(b, orderID)
	b = appendString(b, "sku-"+orderID[len(orderID)-3:])
	b = appendLong(b, 1+amount%7) // item.quantity (int)
	b = appendLong(b, amount)
	b = appendDouble(b, float64(amount)/100)
	b = appendLong(b, ts) // eventTime, timestamp-millis
	b = appendLong(b, 0)  // op UPSERT
	return b
}

// appendJoined appends a framed Joined value (sim.JoinedSchema); b and c
// absent (has false) are null.
func appendJoined(buf []byte, customer string, a int64, b, c int64, hasB, hasC bool, ts int64) []byte {
	buf = frame(buf, joinedSchemaID)
	buf = appendString(buf, customer)
	buf = appendLong(buf, a)
	for _, o := range []struct {
		v   int64
		has bool
	}{{b, hasB}, {c, hasC}} {
		if o.has {
			buf = appendLong(buf, 1)
			buf = appendLong(buf, o.v)
		} else {
			buf = appendLong(buf, 0)
		}
	}
	return appendLong(buf, ts)
}
