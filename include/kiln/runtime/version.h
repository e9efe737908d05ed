#ifndef KILN_RUNTIME_VERSION_H_
#define KILN_RUNTIME_VERSION_H_

#define KILN_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif
const char* kiln_version(void);
#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_VERSION_H_ */
