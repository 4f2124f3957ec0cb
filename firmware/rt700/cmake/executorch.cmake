# ExecuTorch for the RT700 image: the shared build (firmware/cmake/hil_executorch.cmake) plus the
# Neutron delegate, the quantized kernels around a Neutron partition and the Cortex-M backend's
# CMSIS-NN operators, with the operator libraries selected from the program.

include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/hil_executorch.cmake")
# The Cortex-M backend's CMSIS-NN, from the workspace (CMSIS_NN, hil_inputs.cmake), never fetched.
set(CMSIS_NN_LOCAL_PATH "${CMSIS_NN}" CACHE PATH "CMSIS-NN checkout (forced by et-hil: CMSIS_NN)" FORCE)
hil_require_cmsis_nn("et-hil RT700 firmware")
hil_add_executorch(ON
    EXECUTORCH_BUILD_KERNELS_QUANTIZED # quantize/dequantize kernels around a Neutron partition
    EXECUTORCH_BUILD_CORTEX_M          # cortex_m_kernels on CMSIS-NN (--delegate cortex-m)
    EXECUTORCH_BUILD_NXP_NEUTRON)      # executorch_delegate_neutron

# The Neutron delegate takes its model handle from the method allocator, not the 64 KiB heap,
# as NXP builds it (NO_HEAP_USAGE, backends/nxp/runtime/NeutronBackend.cpp; its BUCK target
# passes -DNO_HEAP_USAGE). It includes ExecuTorch headers but links nothing itself.
target_compile_definitions(executorch_delegate_neutron PRIVATE NO_HEAP_USAGE=1)
target_link_libraries(executorch_delegate_neutron PRIVATE executorch_core)

hil_selected_ops(hil_portable_ops_lib "${EXECUTORCH_ROOT}/kernels/portable/functions.yaml" ""
                 portable_kernels)
hil_selected_ops(hil_quantized_ops_lib "" "${EXECUTORCH_ROOT}/kernels/quantized/quantized.yaml"
                 quantized_kernels)
hil_selected_ops(hil_cortex_m_ops_lib "" "${EXECUTORCH_ROOT}/backends/cortex_m/ops/operators.yaml"
                 cortex_m_kernels)

# Libraries the image links, by ExecuTorch target name; the registration libraries carry their
# own whole-archive link option, the Neutron delegate gets it from CMakeLists.txt.
set(HIL_ET_LIBS hil_portable_ops_lib hil_quantized_ops_lib hil_cortex_m_ops_lib executorch executorch_core etdump flatccrt)
hil_require_targets("et-hil RT700 firmware" ${HIL_ET_LIBS} executorch_delegate_neutron)
