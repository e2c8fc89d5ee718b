/* Tandem's runtime C API: load a model exported by `tandem export` and run it, with nothing of
 * the compiler in the process (link with libtandem_runtime; find_package(Tandem) gives the
 * target Tandem::runtime).
 *
 * Every function that can fail returns a tandem_status; TANDEM_OK is 0. After a failure,
 * tandem_last_error() gives a message saying what failed and where, valid on the calling thread
 * until its next call into this API. No function aborts the process on bad input: a missing,
 * truncated, corrupted, foreign or incompatible file is an error code and a message.
 *
 * A model may be run from one thread at a time; several models may run at once. */
#ifndef TANDEM_RUNTIME_H_
#define TANDEM_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tandem_status {
  TANDEM_OK = 0,
  TANDEM_ERROR_ARGUMENT = 1,     /* a null pointer, an index out of range, a size mismatch */
  TANDEM_ERROR_FILE = 2,         /* the artifact cannot be read, or is truncated or corrupt */
  TANDEM_ERROR_INCOMPATIBLE = 3, /* another architecture, format version or missing CPU feature */
  TANDEM_ERROR_RUN = 4,          /* a kernel failed while running */
  TANDEM_ERROR_MEMORY = 5        /* out of memory */
} tandem_status;

typedef enum tandem_dtype {
  TANDEM_F32 = 0,
  TANDEM_F64 = 1,
  TANDEM_F16 = 2,
  TANDEM_I8 = 3,
  TANDEM_U8 = 4,
  TANDEM_I32 = 5,
  TANDEM_I64 = 6,
  TANDEM_BOOL = 7
} tandem_dtype;

/* An input or output of a model. The pointers stay valid as long as the model. */
typedef struct tandem_tensor_info {
  const char* name;
  tandem_dtype dtype;
  int32_t rank;
  const int64_t* shape;
  size_t bytes; /* dense, row-major */
} tandem_tensor_info;

typedef struct tandem_model tandem_model;

/* The message of the calling thread's last failure ("" when none). */
const char* tandem_last_error(void);

/* Loads the artifact at `path` into *model. `num_threads` > 0 sets the number of threads that
 * run parallel loops (for the whole process); 0 keeps the current number (all cores at first). */
tandem_status tandem_model_load(const char* path, int num_threads, tandem_model** model);

/* A model exported with `tandem export --format object --name NAME` and linked into the program
 * defines `const tandem_linked_model tandem_artifact_NAME` (declare it with
 * TANDEM_LINKED_MODEL(NAME)): its payload and a table of its kernels. */
typedef struct tandem_linked_kernel {
  const char* symbol;
  void (*entry)(void** buffers);
} tandem_linked_kernel;

typedef struct tandem_linked_model {
  const uint8_t* payload;
  uint64_t payload_size;
  uint64_t num_kernels;
  const tandem_linked_kernel* kernels;
} tandem_linked_model;

#define TANDEM_LINKED_MODEL(name) extern const tandem_linked_model tandem_artifact_##name

/* Loads a linked model (checks as tandem_model_load but for the file, which the linker made). */
tandem_status tandem_model_load_linked(const tandem_linked_model* linked, int num_threads,
                                       tandem_model** model);

/* Frees the model (null is allowed). */
void tandem_model_free(tandem_model* model);

size_t tandem_model_num_inputs(const tandem_model* model);
size_t tandem_model_num_outputs(const tandem_model* model);
tandem_status tandem_model_input_info(const tandem_model* model, size_t index,
                                      tandem_tensor_info* info);
tandem_status tandem_model_output_info(const tandem_model* model, size_t index,
                                       tandem_tensor_info* info);

/* A manifest entry ("tandem_version", "target", "pipeline", "trace_hash", "model_hash",
 * "required_features"), or null when there is no such key. Valid as long as the model. */
const char* tandem_model_manifest(const tandem_model* model, const char* key);

/* Runs the model: inputs[i] holds input i and outputs[i] receives output i, each of the size
 * its info gives (dense, row-major). Outputs must not overlap each other or the inputs. */
tandem_status tandem_model_run(tandem_model* model, const void* const* inputs,
                               void* const* outputs);

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_RUNTIME_H_ */
