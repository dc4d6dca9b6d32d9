/*
 * pq_i.h - libpq, loaded when a PostgreSQL store is first named.
 *
 * Most processes that link statefs never touch PostgreSQL: every statectl
 * command on a file, the mount daemon, an SDK on a SQLite store. Linking
 * libpq made each of them load it at start, and with it its own libraries
 * (Kerberos, LDAP, SASL, GnuTLS, ...: some twenty more) and their
 * relocations: about two thirds of the start of `statectl --version`
 * (perf stat: 28 ms of CPU with it, 9 without). So the backend calls libpq
 * through this table, which pq_load() fills with dlopen("libpq.so.5") the
 * first time a connection string is parsed (pgb_is_db, pgb_target_parse):
 * a file store never loads it, and a PostgreSQL store pays once per
 * process. Every other part of core/pg/ runs after one of those.
 *
 * The calls keep libpq's names: each PQname below is a macro for the
 * table's pointer, typed as libpq-fe.h declares the function. A call
 * reached without pq_load() having succeeded (a path that skipped it: a
 * bug) loads it then, and aborts if it cannot, never calls NULL.
 */
#ifndef STATEFS_PQ_I_H
#define STATEFS_PQ_I_H

#include <libpq-fe.h>

#define PQ_FUNCS(X) \
	X(PQclear) X(PQconndefaults) X(PQconnectPoll) \
	X(PQconnectStartParams) X(PQconnectdbParams) X(PQconninfoFree) \
	X(PQconninfoParse) X(PQconsumeInput) X(PQenterPipelineMode) \
	X(PQerrorMessage) X(PQescapeLiteral) X(PQexec) X(PQexecParams) \
	X(PQexecPrepared) X(PQexitPipelineMode) X(PQfinish) X(PQfreemem) \
	X(PQgetResult) X(PQgetisnull) X(PQgetlength) X(PQgetvalue) \
	X(PQisBusy) X(PQnfields) X(PQnotifies) X(PQntuples) \
	X(PQpipelineSync) X(PQprepare) X(PQresultErrorField) \
	X(PQresultStatus) X(PQsendFlushRequest) X(PQsendQuery) \
	X(PQsendQueryParams) X(PQsendQueryPrepared) X(PQsetNoticeProcessor) \
	X(PQsetNoticeReceiver) X(PQsetSingleRowMode) X(PQsocket) X(PQstatus)

typedef struct pq_api {
#define PQ_MEMBER(f) __typeof__(f) *f;
	PQ_FUNCS(PQ_MEMBER)
#undef PQ_MEMBER
} pq_api;

/* Loads libpq once per process (thread-safe): SFS_OK, or SFS_UNSUPPORTED
 * with a sentence naming the library and dlerror()'s reason. A child
 * forked while another thread was loading it never loads it (pq.c):
 * SFS_UNSUPPORTED, saying so. */
int pq_load(void);

/* The table, loaded (aborts when libpq cannot be loaded; see above). */
const pq_api *pq_get(void);

#ifndef PQ_LOADER
#define PQclear (pq_get()->PQclear)
#define PQconndefaults (pq_get()->PQconndefaults)
#define PQconnectPoll (pq_get()->PQconnectPoll)
#define PQconnectStartParams (pq_get()->PQconnectStartParams)
#define PQconnectdbParams (pq_get()->PQconnectdbParams)
#define PQconninfoFree (pq_get()->PQconninfoFree)
#define PQconninfoParse (pq_get()->PQconninfoParse)
#define PQconsumeInput (pq_get()->PQconsumeInput)
#define PQenterPipelineMode (pq_get()->PQenterPipelineMode)
#define PQerrorMessage (pq_get()->PQerrorMessage)
#define PQescapeLiteral (pq_get()->PQescapeLiteral)
#define PQexec (pq_get()->PQexec)
#define PQexecParams (pq_get()->PQexecParams)
#define PQexecPrepared (pq_get()->PQexecPrepared)
#define PQexitPipelineMode (pq_get()->PQexitPipelineMode)
#define PQfinish (pq_get()->PQfinish)
#define PQfreemem (pq_get()->PQfreemem)
#define PQgetResult (pq_get()->PQgetResult)
#define PQgetisnull (pq_get()->PQgetisnull)
#define PQgetlength (pq_get()->PQgetlength)
#define PQgetvalue (pq_get()->PQgetvalue)
#define PQisBusy (pq_get()->PQisBusy)
#define PQnfields (pq_get()->PQnfields)
#define PQnotifies (pq_get()->PQnotifies)
#define PQntuples (pq_get()->PQntuples)
#define PQpipelineSync (pq_get()->PQpipelineSync)
#define PQprepare (pq_get()->PQprepare)
#define PQresultErrorField (pq_get()->PQresultErrorField)
#define PQresultStatus (pq_get()->PQresultStatus)
#define PQsendFlushRequest (pq_get()->PQsendFlushRequest)
#define PQsendQuery (pq_get()->PQsendQuery)
#define PQsendQueryParams (pq_get()->PQsendQueryParams)
#define PQsendQueryPrepared (pq_get()->PQsendQueryPrepared)
#define PQsetNoticeProcessor (pq_get()->PQsetNoticeProcessor)
#define PQsetNoticeReceiver (pq_get()->PQsetNoticeReceiver)
#define PQsetSingleRowMode (pq_get()->PQsetSingleRowMode)
#define PQsocket (pq_get()->PQsocket)
#define PQstatus (pq_get()->PQstatus)
#endif

#endif
