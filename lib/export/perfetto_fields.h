/*
 * perfetto_fields.h - the field numbers of Perfetto's trace protos
 * (protos/perfetto/trace/) that the Perfetto writers use
 * (library-internal); protobuf.h encodes them.
 */
#ifndef EMBER_EXPORT_PERFETTO_FIELDS_H
#define EMBER_EXPORT_PERFETTO_FIELDS_H

enum {
    TRACE_PACKET = 1,
    TP_TIMESTAMP = 8,
    TP_SEQUENCE_ID = 10,
    TP_TRACK_EVENT = 11,
    TP_SEQUENCE_FLAGS = 13,
    TP_TRACK_DESCRIPTOR = 60,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    PD_PID = 1,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    TE_ANNOTATION = 4,
    TE_TYPE = 9,
    TE_TRACK = 11,
    TE_NAME = 23,
    TE_COUNTER = 30,
    TE_DOUBLE_COUNTER = 44,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_STRING = 6,
    DA_NAME = 10,
    SEQ = 1, /* our one packet sequence */
};

#endif
