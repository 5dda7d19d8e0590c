module @IrToHlo.90 attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4x16xf32>, %arg3: tensor<16xf32>, %arg4: tensor<16x8xf32>, %arg5: tensor<4x8xf32>, %arg6: tensor<f32>) -> (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<4x16xf32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<6.250000e-02> : tensor<4x4xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<4x4xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<4x16xf32>
    %cst_2 = stablehlo.constant dense<6.250000e-02> : tensor<f32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.transpose %arg4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[8,16]{0,1}"} : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.dot_general %arg5, %0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %2 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
    %3 = stablehlo.add %1, %2 : tensor<4x16xf32>
    %4 = stablehlo.maximum %3, %cst_1 : tensor<4x16xf32>
    %5 = stablehlo.transpose %arg2, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,4]{0,1}"} : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %6 = stablehlo.dot_general %4, %5, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
    %7 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
    %8 = stablehlo.add %6, %7 : tensor<4x4xf32>
    %9 = stablehlo.subtract %8, %arg0 : tensor<4x4xf32>
    %10 = stablehlo.multiply %9, %9 : tensor<4x4xf32>
    %11 = stablehlo.reduce(%10 init: %cst_3) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<f32>
    %12 = stablehlo.multiply %11, %cst_2 : tensor<f32>
    %13 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[8,4]{0,1}"} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %14 = stablehlo.compare  GT, %4, %cst_1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
    %15 = stablehlo.multiply %9, %cst_0 : tensor<4x4xf32>
    %16 = stablehlo.multiply %15, %cst : tensor<4x4xf32>
    %17 = stablehlo.dot_general %16, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %18 = stablehlo.select %14, %17, %cst_1 : tensor<4x16xi1>, tensor<4x16xf32>
    %19 = stablehlo.dot_general %13, %18, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    %20 = stablehlo.transpose %19, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,8]{0,1}"} : (tensor<8x16xf32>) -> tensor<16x8xf32>
    %21 = stablehlo.broadcast_in_dim %arg6, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %22 = stablehlo.multiply %20, %21 : tensor<16x8xf32>
    %23 = stablehlo.add %arg4, %22 : tensor<16x8xf32>
    %24 = stablehlo.reduce(%18 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<4x16xf32>, tensor<f32>) -> tensor<16xf32>
    %25 = stablehlo.broadcast_in_dim %arg6, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %26 = stablehlo.multiply %24, %25 : tensor<16xf32>
    %27 = stablehlo.add %arg3, %26 : tensor<16xf32>
    %28 = stablehlo.transpose %4, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[16,4]{0,1}"} : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %29 = stablehlo.dot_general %28, %16, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x4xf32>, tensor<4x4xf32>) -> tensor<16x4xf32>
    %30 = stablehlo.transpose %29, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,16]{0,1}"} : (tensor<16x4xf32>) -> tensor<4x16xf32>
    %31 = stablehlo.broadcast_in_dim %arg6, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %32 = stablehlo.multiply %30, %31 : tensor<4x16xf32>
    %33 = stablehlo.add %arg2, %32 : tensor<4x16xf32>
    %34 = stablehlo.reduce(%16 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %35 = stablehlo.broadcast_in_dim %arg6, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %36 = stablehlo.multiply %34, %35 : tensor<4xf32>
    %37 = stablehlo.add %arg1, %36 : tensor<4xf32>
    return %12, %23, %27, %33, %37 : tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<4x16xf32>, tensor<4xf32>
  }
}
