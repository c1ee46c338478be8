// The modes live in core/ because the typed config names them; the scheduler re-exports them.
#pragma once
#include "core/mode.h"
